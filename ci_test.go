package statsblob

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEDevelopmentNamesCI: the README's Development section, which
// says what CI runs, names every make target of .ci/run. It had left out
// make fault and make e2e-nats, so a contributor who ran what it listed
// still met them failing in CI.
func TestREADMEDevelopmentNamesCI(t *testing.T) {
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, dev, ok := strings.Cut(string(readme), "\n## Development\n")
	if !ok {
		t.Fatal("README.md has no Development section")
	}
	dev, _, _ = strings.Cut(dev, "\n## ")
	dev = strings.Join(strings.Fields(dev), " ")
	for _, line := range strings.Split(string(ci), "\n") {
		if !strings.HasPrefix(line, "make ") {
			continue
		}
		if !strings.Contains(dev, "`"+line+"`") {
			t.Errorf(".ci/run runs %q, which README.md's Development section does not name", line)
		}
	}
}
