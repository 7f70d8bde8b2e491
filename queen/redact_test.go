package queen

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRedactURL: a log line never shows a URL's credential, whether it is
// a password or a token put where the user goes, and keeps the rest.
func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"http://queen:6632":                      "http://queen:6632",
		"https://svc:hunter2@queen.example.com/": "https://svc:xxxxx@queen.example.com/",
		"https://TOKEN-abc@queen.example.com":    "https://xxxxx@queen.example.com",
		"http://svc:hunter2@[::1":                "http://xxxxx@[::1",
		"not a url at all":                       "not a url at all",
	} {
		assert.Equal(t, want, RedactURL(raw), raw)
	}
}
