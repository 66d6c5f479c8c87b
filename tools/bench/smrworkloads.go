package bench

import "github.com/meridian-kv/meridian/workload"

// smrProtocols are the full-replication protocols the TPC-C and Bank workloads run by default:
// one of each kind (paxos-commit's one serial log commits a few transactions a second under
// this load and is left out).
var smrProtocols = []string{"helios-1", "mf", "rc", "2pc-paxos", "ogre"}

// TPCCDefaults runs the object TPC-C of spec alvin.md §7.2 (write-intensive mix, one warehouse
// per datacenter) like the main job (aws-helios, 12 closed-loop clients per datacenter, 60
// virtual seconds), with retries: a client re-runs an aborted transaction until it commits
// (spec §7.2's load generation), so the end-to-end latency runs from its first BEGIN. Each
// retry waits a backoff with full jitter from smrRetryBackoffUs: immediate retries spin on
// the protocols that abort a transaction at once when a local one holds its keys (Helios, MF:
// 98% of attempts aborted on Bank, and audits of every account never commit).
func TPCCDefaults() Options {
	o := Defaults()
	o.Protocols, o.Workload, o.Retry, o.RetryBackoffUs = smrProtocols, workload.DefaultTPCC(), true, smrRetryBackoffUs
	return o
}

// smrRetryBackoffUs is the base of TPC-C's and Bank's retry backoff.
const smrRetryBackoffUs = 10_000

// BankDefaults runs the Bank workload (spec alvin.md §7.2) like TPCCDefaults.
func BankDefaults() Options {
	o := TPCCDefaults()
	o.Workload = workload.DefaultBank()
	return o
}
