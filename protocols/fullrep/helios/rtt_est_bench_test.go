package helios_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/fullrep/helios"
	"github.com/meridian-kv/meridian/tools/bench"
)

// TestZeroRTTEstimatesRunAsHeliosB: a simulated run of Helios-0 with every RTT estimate 0 is the
// run of Helios-B, transaction for transaction.
func TestZeroRTTEstimatesRunAsHeliosB(t *testing.T) {
	opts := bench.Defaults()
	opts.ClientsPerDC, opts.DurationUs, opts.WarmupUs = 4, 3_000_000, 500_000
	hb, err := bench.Run(opts, "helios-b")
	if err != nil {
		t.Fatal(err)
	}
	opts.Params = protocol.Params{helios.ParamRTTEstimates: strings.TrimSuffix(strings.Repeat("0,", 10), ",")}
	h0, err := bench.Run(opts, "helios-0")
	if err != nil {
		t.Fatal(err)
	}
	if !h0.Checker.OK || !hb.Checker.OK {
		t.Fatalf("checker: %s / %s", h0.Checker.Summary(), hb.Checker.Summary())
	}
	if !reflect.DeepEqual(h0.DCs, hb.DCs) || h0.Sim != hb.Sim {
		t.Errorf("Helios-0 with zero estimates differs from Helios-B:\n%+v\n%+v", h0.DCs, hb.DCs)
	}
	if hb.DCs[0].Committed == 0 {
		t.Error("nothing committed")
	}
}
