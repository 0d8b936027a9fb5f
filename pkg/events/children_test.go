package events_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
)

func TestChildStepIDRoundTrips(t *testing.T) {
	for _, c := range []struct {
		parent string
		index  int
	}{{"fan", 0}, {"fan", 9999}, {"a[1]", 3}, {"x]", 12}} {
		parent, index, ok := events.ParseChildStepID(events.ChildStepID(c.parent, c.index))
		require.True(t, ok, c)
		require.Equal(t, c.parent, parent)
		require.Equal(t, c.index, index)
	}
}

func TestParseChildStepIDRefusesOtherForms(t *testing.T) {
	for _, id := range []string{"fan", "[1]", "fan[]", "fan[01]", "fan[-1]", "fan[+1]", "fan[1]x", "fan[a]", "fan[1"} {
		_, _, ok := events.ParseChildStepID(id)
		require.False(t, ok, id)
	}
}
