package swarm

import (
	"reflect"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
)

// TestRunTCCVariantSkipsOnlyTheSameRuns: the seeds RunTCCVariant leaves out are exactly those
// whose options with the variant's parameters forced equal the plain draw's (so their runs are
// the plain swarm's), and it keeps some seeds and leaves out others.
func TestRunTCCVariantSkipsOnlyTheSameRuns(t *testing.T) {
	extra := protocol.Params{"read_clock": "false"}
	skipped := 0
	for seed := uint64(1); seed <= SeedsPerProtocol; seed++ {
		plain, forced := TCCOptions("eiger", seed, nil), TCCOptions("eiger", seed, extra)
		same := reflect.DeepEqual(plain, forced)
		if holdsAll(plain.Params, extra) != same {
			t.Fatalf("seed %d: skipped %v, but the forced run equals the plain one: %v", seed, holdsAll(plain.Params, extra), same)
		}
		if same {
			skipped++
		}
	}
	if skipped == 0 || skipped == SeedsPerProtocol {
		t.Fatalf("%d of %d seeds skipped: the variant runs all or none", skipped, SeedsPerProtocol)
	}
	t.Logf("%d of %d seeds skipped", skipped, SeedsPerProtocol)
}
