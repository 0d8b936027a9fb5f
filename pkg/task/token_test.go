package task_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/task"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, task.MinTaskKeyBytes) }

// A token verifies for its own attempt only: another run, step or logical
// attempt, a token cut or changed, an empty one, or one of another key
// never does.
func TestTokenBindsTheAttempt(t *testing.T) {
	t.Parallel()
	s, err := task.NewSigner(key(1))
	require.NoError(t, err)
	tok := s.Sign("run-1", "step", "2")
	require.True(t, strings.HasPrefix(tok, "v1."))
	require.True(t, s.Verify(tok, "run-1", "step", "2"))
	require.Equal(t, tok, s.Sign("run-1", "step", "2"), "every delivery and resend of an attempt carries the same token")

	for _, other := range [][3]string{
		{"run-2", "step", "2"}, {"run-1", "other", "2"}, {"run-1", "step", "3"},
		// The encoding is length-prefixed: moving bytes between ids changes it.
		{"run-1s", "tep", "2"}, {"run-1", "step2", ""}, {"run-1", "ste", "p2"},
	} {
		require.False(t, s.Verify(tok, other[0], other[1], other[2]), "token of run-1/step/2 verified for %v", other)
	}
	for _, bad := range []string{"", "v1.", tok[:len(tok)-1], tok + "A", strings.Replace(tok, "v1.", "v2.", 1), "v1.!!!"} {
		require.False(t, s.Verify(bad, "run-1", "step", "2"), "token %q verified", bad)
	}
	other, err := task.NewSigner(key(2))
	require.NoError(t, err)
	require.False(t, other.Verify(tok, "run-1", "step", "2"), "a token of another key verified")
}

// Rotation: a Signer signs with its current key and verifies the current
// and the previous keys; once a key is dropped, its tokens fail.
func TestTokenKeyRotation(t *testing.T) {
	t.Parallel()
	old, err := task.NewSigner(key(1))
	require.NoError(t, err)
	rotated, err := task.NewSigner(key(2), key(1))
	require.NoError(t, err)
	done, err := task.NewSigner(key(2))
	require.NoError(t, err)

	oldTok, newTok := old.Sign("r", "s", "1"), rotated.Sign("r", "s", "1")
	require.NotEqual(t, oldTok, newTok, "a rotated signer signs with its current key")
	require.True(t, rotated.Verify(oldTok, "r", "s", "1"), "a previous key still verifies")
	require.True(t, rotated.Verify(newTok, "r", "s", "1"))
	require.True(t, done.Verify(newTok, "r", "s", "1"))
	require.False(t, done.Verify(oldTok, "r", "s", "1"), "a dropped key no longer verifies")
}

// Keys: at MinTaskKeyBytes a key is taken, one byte shorter it is refused;
// ParseTaskKeys reads lines or commas, both base64 alphabets, comments.
func TestTaskKeys(t *testing.T) {
	t.Parallel()
	_, err := task.NewSigner(key(1)[:task.MinTaskKeyBytes-1])
	require.ErrorIs(t, err, task.ErrTaskKey)
	_, err = task.NewSigner(key(1), key(2)[:task.MinTaskKeyBytes-1])
	require.ErrorIs(t, err, task.ErrTaskKey)
	_, err = task.NewSigner(key(1))
	require.NoError(t, err)

	cur, prev := bytes.Repeat([]byte{0xfb}, 32), bytes.Repeat([]byte{0xff}, 40) // '+' '/' in std, '-' '_' in url
	want, err := task.NewSigner(cur, prev)
	require.NoError(t, err)
	tok := want.Sign("r", "s", "1")
	oldTok, err := task.NewSigner(prev)
	require.NoError(t, err)
	for _, text := range []string{
		task.EncodeTaskKey(cur) + "," + task.EncodeTaskKey(prev),
		"# rotated 2026-11-27\n\n" + task.EncodeTaskKey(cur) + "\n" + strings.TrimRight(task.EncodeTaskKey(prev), "=") + "\n",
		"_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-",
	} {
		s, err := task.ParseTaskKeys(text)
		require.NoError(t, err, text)
		if strings.HasPrefix(text, "_-") {
			continue // URL alphabet accepted
		}
		require.Equal(t, tok, s.Sign("r", "s", "1"), text)
		require.True(t, s.Verify(oldTok.Sign("r", "s", "1"), "r", "s", "1"), text)
	}
	for _, bad := range []string{"", "# only a comment\n", "not*base64", task.EncodeTaskKey(key(1)[:31])} {
		_, err := task.ParseTaskKeys(bad)
		require.ErrorIs(t, err, task.ErrTaskKey, "%q", bad)
	}
}
