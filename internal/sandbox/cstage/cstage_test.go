package cstage

import (
	"regexp"
	"strconv"
	"testing"
)

// TestProtocol checks that stage.c and the Go side agree on the protocol
// version, and the blob's name on its form (build.sh computes it too).
func TestProtocol(t *testing.T) {
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
}
