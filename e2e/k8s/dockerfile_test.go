package k8s

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// The image and the manifest are two files that must agree: the command the
// StatefulSet runs has to exist in the image, and the user the pod insists
// on has to be the one the image runs as.
func TestDockerfileShipsWhatTheManifestRuns(t *testing.T) {
	raw, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	var sts appsv1.StatefulSet
	decode(t, "statefulset.yaml", &sts)
	c := sts.Spec.Template.Spec.Containers[0]

	for _, want := range []string{
		"CGO_ENABLED=0",
		"./cmd/queen-kafka",
		"./cmd/queen-dev",
		"COPY --from=build /out/queen-kafka /out/queen-dev /app/bin/",
		"COPY --chmod=0555 k8s/entrypoint.sh " + c.Command[1],
		"COPY --from=shell /bin/busybox " + c.Command[0],
		`ENTRYPOINT ["/app/bin/queen-kafka"]`,
		"EXPOSE 9092",
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(df, -1)
	if len(froms) < 2 || !strings.HasPrefix(froms[len(froms)-1][1], "gcr.io/distroless/static") ||
		!strings.HasSuffix(froms[len(froms)-1][1], ":nonroot") {
		t.Errorf("final stage %v is not distroless static nonroot", froms)
	}
	user := regexp.MustCompile(`(?m)^USER\s+(\d+):(\d+)\s*$`).FindStringSubmatch(df)
	if user == nil {
		t.Fatal("Dockerfile sets no numeric USER")
	}
	uid, _ := strconv.ParseInt(user[1], 10, 64)
	psc := sts.Spec.Template.Spec.SecurityContext
	if uid == 0 || psc.RunAsUser == nil || *psc.RunAsUser != uid {
		t.Errorf("image user %d, pod runAsUser %v", uid, psc.RunAsUser)
	}
	// Mirror of the entrypoint's default exec target.
	script, err := os.ReadFile("entrypoint.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), `exec "${QK_EXEC:-/app/bin/queen-kafka}" "$@"`) {
		t.Error("entrypoint does not exec /app/bin/queen-kafka by default")
	}
}

// The Dockerfile's queen-dev example must work as written in the image:
// queen-dev listening on every interface (its default, 127.0.0.1, is not
// reachable through -p) and its data under a directory the image's user
// can write (its default, ./.queen-dev, is under the root-owned WORKDIR).
func TestDockerfileQueenDevExampleRuns(t *testing.T) {
	raw, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	// The example, its continuation lines joined.
	var example string
	lines := strings.Split(df, "\n")
	for i, l := range lines {
		if !strings.Contains(l, "docker run") {
			continue
		}
		cmd := strings.TrimPrefix(l, "#")
		for strings.HasSuffix(strings.TrimSpace(cmd), `\`) && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(strings.TrimSpace(cmd), `\`) + " " + strings.TrimPrefix(lines[i], "#")
		}
		if strings.Contains(cmd, "/app/bin/queen-dev") {
			example = cmd
		}
	}
	if example == "" {
		t.Fatal("no docker run example of queen-dev in the Dockerfile")
	}
	env := map[string]string{}
	for _, m := range regexp.MustCompile(`-e\s+(\w+)=(\S+)`).FindAllStringSubmatch(example, -1) {
		env[m[1]] = m[2]
	}
	host, port, ok := strings.Cut(env["QUEEN_DEV_ADDR"], ":")
	if !ok || (host != "" && host != "0.0.0.0" && host != "[::]") {
		t.Errorf("queen-dev example listens on %q, not every interface: %s", env["QUEEN_DEV_ADDR"], example)
	}
	if !strings.Contains(example, "-p "+port+":"+port) && !strings.Contains(example, ":"+port+" ") {
		t.Errorf("queen-dev example publishes no port %s: %s", port, example)
	}
	// distroless's nonroot user (the image's USER) owns /home/nonroot;
	// /tmp is world-writable. Nothing else in the image is writable by it.
	data := env["QUEEN_DEV_DATA"]
	if !strings.HasPrefix(data, "/home/nonroot/") && !strings.HasPrefix(data, "/tmp/") {
		t.Errorf("queen-dev example writes its data to %q, which the image's user cannot write: %s", data, example)
	}
	if !regexp.MustCompile(`(?m)^USER\s+65532:65532\s*$`).MatchString(df) {
		t.Error("the image's user is no longer distroless's nonroot (65532): revisit the writable directories above")
	}
}
