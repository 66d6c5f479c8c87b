package eiger

import (
	"testing"

	"github.com/meridian-kv/meridian/protocol"
)

// TestReadingDefaults: by default Eiger runs as spec §3.2 prescribes (per-version EVT, reads
// with the client's clock); reading=thesis selects the thesis's text (partition-wide EVT, no
// clock); partition_evt and read_clock still override either; any other reading is refused.
func TestReadingDefaults(t *testing.T) {
	for _, tc := range []struct {
		params                  protocol.Params
		partitionEVT, readClock bool
	}{
		{nil, false, true},
		{protocol.Params{ParamReading: ReadingSpec}, false, true},
		{protocol.Params{ParamReading: ReadingThesis}, true, false},
		{protocol.Params{ParamReading: ReadingThesis, ParamReadClock: "true"}, true, true},
		{protocol.Params{ParamPartitionEVT: "true"}, true, true},
	} {
		p, err := parseParams(tc.params)
		if err != nil {
			t.Fatalf("%v: %v", tc.params, err)
		}
		if p.partitionEVT != tc.partitionEVT || p.readClock != tc.readClock {
			t.Errorf("%v: partition_evt=%v read_clock=%v, want %v, %v", tc.params, p.partitionEVT, p.readClock, tc.partitionEVT, tc.readClock)
		}
	}
	if _, err := parseParams(protocol.Params{ParamReading: "paper"}); err == nil {
		t.Error("reading=paper was accepted")
	}
}
