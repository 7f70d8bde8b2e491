// Command fakefacade stands in for queen-kafka as the child of an embedded
// queen-dev, for the supervisor behaviours a real facade does not show on
// demand. FAKE_FACADE_MODE picks one:
//
//   - ignore-term: says "ready", then logs "got SIGTERM" for each SIGTERM
//     and keeps running, so only SIGKILL stops it;
//   - spew: writes 1,000 lines, the first with escape sequences and control
//     bytes, the second 10 KiB long, then idles;
//   - env: writes its environment, one "env NAME=value" line each, then
//     idles.
//
// e2e builds it in the test (go build ./testdata/fakefacade, in the e2e module).
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	switch mode := os.Getenv("FAKE_FACADE_MODE"); mode {
	case "ignore-term":
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		fmt.Println("ready")
		for range sigs {
			fmt.Println("got SIGTERM")
		}
	case "spew":
		w := bufio.NewWriter(os.Stdout)
		fmt.Fprint(w, "\x1b[31mred\x1b[0m \x1b]0;title\x07bell\x00nul\x7fdel\r\n")
		fmt.Fprintln(w, strings.Repeat("y", 10<<10))
		for i := 2; i < 1000; i++ {
			fmt.Fprintf(w, "spew %d\n", i)
		}
		w.Flush()
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println("env " + kv)
		}
	default:
		fmt.Fprintf(os.Stderr, "fakefacade: unknown FAKE_FACADE_MODE %q\n", mode)
		os.Exit(2)
	}
	for {
		time.Sleep(time.Hour)
	}
}
