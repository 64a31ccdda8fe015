package cstage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// sourceSum is how build.sh hashes a program's sources for its blob's
// name: "nsb-PROG protocol N\n", sys.h, then the program's source.
func sourceSum(t *testing.T, prog string, protocol int, src string) string {
	t.Helper()
	h := sha256.New()
	fmt.Fprintf(h, "nsb-%s protocol %d\n", prog, protocol)
	for _, f := range []string{"src/sys.h", src} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// TestSums checks that sums.go is the hash of the sources as they are, with
// the Go side's protocol versions: a blob built from other sources, or
// for another protocol, is never taken.
func TestSums(t *testing.T) {
	if got := sourceSum(t, "cstage", Protocol, "src/stage.c"); got != stageSum {
		t.Errorf("stage.c and sys.h hash to %s, sums.go says %s: run build.sh and commit sums.go", got, stageSum)
	}
	if got := sourceSum(t, "chelper", HelperProtocol, "src/helper.c"); got != helperSum {
		t.Errorf("helper.c and sys.h hash to %s, sums.go says %s: run build.sh and commit sums.go", got, helperSum)
	}
	if got := sourceSum(t, "limit", LimitProtocol, "src/limit.c"); got != limitSum {
		t.Errorf("limit.c and sys.h hash to %s, sums.go says %s: run build.sh and commit sums.go", got, limitSum)
	}
}

// TestProtocol checks that stage.c and the Go side agree on the protocol
// version, and the blob's name on its form (build.sh computes it too).
func TestProtocol(t *testing.T) {
	source, err := os.ReadFile("src/stage.c")
	if err != nil {
		t.Fatal(err)
	}
	helperSource, err := os.ReadFile("src/helper.c")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#define NSB_PROTOCOL (\d+)$`).FindSubmatch(source)
	if m == nil || string(m[1]) != strconv.Itoa(Protocol) {
		t.Errorf("stage.c says protocol %q, cstage.Protocol is %d", m, Protocol)
	}
	if name := Name("amd64"); !regexp.MustCompile(`^stage-linux-amd64-[0-9a-f]{16}$`).MatchString(name) {
		t.Errorf("blob name %q", name)
	}
	m = regexp.MustCompile(`(?m)^#define NSB_HELPER_PROTOCOL (\d+)$`).FindSubmatch(helperSource)
	if m == nil || string(m[1]) != strconv.Itoa(HelperProtocol) {
		t.Errorf("helper.c says protocol %q, cstage.HelperProtocol is %d", m, HelperProtocol)
	}
	if name := HelperName("arm64"); !regexp.MustCompile(`^helper-linux-arm64-[0-9a-f]{16}$`).MatchString(name) {
		t.Errorf("helper blob name %q", name)
	}
	limitSource, err := os.ReadFile("src/limit.c")
	if err != nil {
		t.Fatal(err)
	}
	m = regexp.MustCompile(`(?m)^#define NSB_LIMIT_PROTOCOL (\d+)$`).FindSubmatch(limitSource)
	if m == nil || string(m[1]) != strconv.Itoa(LimitProtocol) {
		t.Errorf("limit.c says protocol %q, cstage.LimitProtocol is %d", m, LimitProtocol)
	}
	if name := LimitName("amd64"); !regexp.MustCompile(`^limit-linux-amd64-[0-9a-f]{16}$`).MatchString(name) {
		t.Errorf("limit blob name %q", name)
	}
}
