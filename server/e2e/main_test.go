package e2e

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// TestMain lets more of these tests run at once than the machine has cores (go test's default
// -parallel): each spends most of its time waiting on emulated WAN delays and real sleeps, not
// computing. A -parallel given on the command line wins. It removes the meridian binary the
// tests built (meridianBinary) when they end.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", "4")
	}
	code := m.Run()
	if meridianBin != "" {
		os.RemoveAll(filepath.Dir(meridianBin)) // 54 MB a run otherwise left in the temp dir
	}
	os.Exit(code)
}
