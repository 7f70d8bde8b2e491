package testsupport

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// KiBRecord is a 1 KiB record payload in the facade's envelope shape
// ({"k","t","v"}, padded with spaces to 1,024 bytes): what the dev broker's
// benchmarks push, in process and against the binary.
func KiBRecord() string {
	v := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("x"), 740))
	p := `{"k":null,"t":1787824800123,"v":"` + v + `"}`
	return p + strings.Repeat(" ", 1024-len(p))
}

// PushBody is a POST /api/v1/push body of n KiBRecords to queue "bench",
// partition part.
func PushBody(part, n int) []byte {
	rec := KiBRecord()
	var sb strings.Builder
	sb.WriteString(`{"items":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"queue":"bench","partition":"%d","payload":%s}`, part, rec)
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

// Post sends body to url and reads the answer into buf (reused: a benchmark
// client should cost as little CPU as it can). A transport error or a status
// other than want is an Error of b, not fatal, so it may run inside
// RunParallel.
func Post(b testing.TB, hc *http.Client, url string, body []byte, want int, buf *bytes.Buffer) []byte {
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Error(err)
		return nil
	}
	buf.Reset()
	_, _ = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		b.Errorf("status %d: %.200s", resp.StatusCode, buf.Bytes())
	}
	return buf.Bytes()
}
