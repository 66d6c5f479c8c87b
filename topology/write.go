package topology

import (
	"encoding/json"
	"fmt"
)

// MarshalJSONFile returns t as a topology file in the JSON format (see the package
// documentation) that Load reads back as t: every pair's RTT once, in datacenter order, and the
// standard deviations that are not zero. It is how a topology built in memory, such as PerSite's,
// reaches the processes of a cluster, which read their topology from a preset or a file. It fails
// if t is invalid.
func (t *Topology) MarshalJSONFile() ([]byte, error) {
	if _, err := t.Validate(); err != nil {
		return nil, fmt.Errorf("topology %s: %w", t.Name, err)
	}
	f := file{Name: t.Name, Datacenters: t.DCs, RTTMs: map[string]map[string]*float64{},
		StdDevMs: map[string]map[string]*float64{}}
	for i, a := range t.DCs {
		for j := i + 1; j < t.N(); j++ {
			b := t.DCs[j]
			put(f.RTTMs, a, b, t.RTTMs[i][j])
			if t.StdDevMs[i][j] != 0 {
				put(f.StdDevMs, a, b, t.StdDevMs[i][j])
			}
		}
	}
	data, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return nil, fmt.Errorf("topology %s: %w", t.Name, err)
	}
	return append(data, '\n'), nil
}

// put sets m[a][b] to v.
func put(m map[string]map[string]*float64, a, b string, v float64) {
	if m[a] == nil {
		m[a] = map[string]*float64{}
	}
	m[a][b] = &v
}
