package streams

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
)

// Every field a Weft definition sets is compared: a stream that differs
// from the definition in any of them is updated by ensure.
func TestSameDefinitionComparesEverySetField(t *testing.T) {
	t.Parallel()
	lanes, err := TaskLanes(Config{}, "default")
	require.NoError(t, err)
	for _, want := range append(All(Config{}), lanes) {
		require.True(t, sameDefinition(want, want), want.Name)
		v := reflect.ValueOf(want)
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if v.Field(i).IsZero() {
				continue
			}
			have := want
			field := reflect.ValueOf(&have).Elem().Field(i)
			switch field.Kind() {
			case reflect.Slice:
				field.Set(reflect.Zero(field.Type()))
			case reflect.Pointer:
				other := reflect.New(field.Type().Elem())
				other.Elem().Field(0).SetString("other")
				field.Set(other)
			default:
				field.Set(reflect.Zero(field.Type()))
			}
			if f.Name == "Replicas" { // zero is JetStream's one replica
				have.Replicas = 3
			}
			require.False(t, sameDefinition(have, want), "%s: a stream with another %s", want.Name, f.Name)
		}
	}
}

// A stream the server created from a definition has that definition, with
// the fields the server fills in.
func TestSameDefinitionHoldsForTheServersConfig(t *testing.T) {
	t.Parallel()
	js := weftest.NewNATS(t).JetStream(t)
	ctx := t.Context()
	lanes, err := TaskLanes(Config{MaxBytes: 8 << 20, LanesMaxBytes: 8 << 20, CancelsMaxBytes: 8 << 20}, "default")
	require.NoError(t, err)
	for _, want := range append(All(Config{MaxBytes: 8 << 20, CancelsMaxBytes: 8 << 20}), lanes) {
		s, err := js.CreateStream(ctx, want)
		require.NoError(t, err, want.Name)
		require.True(t, sameDefinition(s.CachedInfo().Config, want), want.Name)
	}
}
