package ui_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/services/projector/internal/ui"
)

// On a `weft dev` stack the sign-in form says where the dev token is
// (issue #19, item 12); on any other stack it names no file.
func TestSignInNamesDevTokenFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file string }{
		{"dev", ".weft/dev/token"},
		{"escaped", `/tmp/a "b" & <c>/token`},
		{"other", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupWith(t, ui.Options{DevTokenFile: tc.file, PollInterval: testPoll})
			b.do(chromedp.Navigate(b.url+"/"), chromedp.WaitVisible(sel("signin-token")))
			if tc.file == "" {
				require.False(t, eval[bool](b, `!!document.querySelector('[data-testid="signin-dev-token"]')`))
				return
			}
			require.True(t, eval[bool](b, visible(`[data-testid="signin-dev-token"]`)))
			require.Equal(t, tc.file, eval[string](b, `document.querySelector('[data-testid="signin-dev-token-file"]').textContent`))
			require.Contains(t, eval[string](b, `document.querySelector('[data-testid="signin-dev-token"]').textContent`), "weft dev")
			b.console.RequireNoErrors(t)
		})
	}
}
