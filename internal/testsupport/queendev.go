package testsupport

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"
)

// QueenDev is a queen-dev process (not started) serving addr from the data
// directory data, with extra environment (QUEEN_DEV_FAULTS,
// QUEEN_DEV_TOKENS …) over BaseEnv; it is ready once addr accepts (up to
// 15 s). Its URL is "http://" + addr.
func QueenDev(bin, addr, data string, extra map[string]string) *Proc {
	env := map[string]string{"QUEEN_DEV_ADDR": addr, "QUEEN_DEV_DATA": data}
	maps.Copy(env, extra)
	return &Proc{Name: "queen-dev@" + addr, Bin: bin, Env: EnvList(env), Ready: WaitTCP(addr, 15*time.Second), Out: &LogBuffer{}}
}

// WaitHealth is a Ready that waits up to limit until GET url/health answers
// 200 from the process itself (Listens: another test's process may hold a
// port this one was given), failing at once if the process exits first.
func WaitHealth(url string, limit time.Duration) func(*Proc) error {
	return func(p *Proc) error {
		deadline := time.Now().Add(limit)
		hc := &http.Client{Timeout: time.Second}
		for time.Now().Before(deadline) {
			select {
			case <-p.Done():
				return fmt.Errorf("%s exited: %v", p.Name, p.ExitErr())
			default:
			}
			resp, err := hc.Get(url + "/health")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK && Listens(p.Pid(), strings.TrimPrefix(url, "http://")) {
					return nil
				}
			}
			time.Sleep(25 * time.Millisecond)
		}
		return fmt.Errorf("%s: no 200 from /health within %v", p.Name, limit)
	}
}
