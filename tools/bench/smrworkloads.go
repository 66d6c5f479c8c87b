package bench

import "github.com/meridian-kv/meridian/workload"

// smrProtocols are the full-replication protocols the TPC-C and Bank workloads run by default:
// every serializable ReadWrite protocol that tolerates no outage by design or tolerates one.
var smrProtocols = []string{"helios-1", "mf", "rc", "2pc-paxos", "paxos-commit"}

// TPCCDefaults runs the object TPC-C of spec alvin.md §7.2 (write-intensive mix, one warehouse
// per datacenter) like the main job (aws-helios, 12 closed-loop clients per datacenter, 60
// virtual seconds), with retries: a client re-runs an aborted transaction until it commits
// (spec §7.2's load generation), so the end-to-end latency runs from its first BEGIN.
func TPCCDefaults() Options {
	o := Defaults()
	o.Protocols, o.Workload, o.Retry = smrProtocols, workload.DefaultTPCC(), true
	return o
}

// BankDefaults runs the Bank workload (spec alvin.md §7.2) like TPCCDefaults.
func BankDefaults() Options {
	o := TPCCDefaults()
	o.Workload = workload.DefaultTPCC() // BANKTODO
	return o
}
