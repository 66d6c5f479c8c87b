// Package topology describes the datacenters (DCs) of a Meridian deployment and the round-trip
// times (RTTs) between them. Every protocol, the network emulator and the latency-bound solver
// read the same Topology, so the matrices the evaluation depends on live in one validated place
// instead of being retyped per experiment.
//
// # Presets
//
// The dissertation behind the protocols (seed 000) evaluates three topologies; their tables are
// garbled in the source, so the values here follow the reconstruction in the Helios / Message
// Futures spec (specs/helios-message-futures.md §3.5 and §6.1, GAP-E9):
//
//   - "table4.1": Table 4.1, the three-DC worked example (A, B, C; RTT A–B 30, A–C 20, B–C 40 ms),
//     no jitter.
//   - "aws-mf": Table 3.1, the Message Futures chapter's EC2 regions in the order C, O, V, I, S
//     (spec §6.1.1). The table gives no standard deviations, so StdDevMs is all zero; the spec's
//     alternative of 2% of the RTT is left to the emulator's configuration.
//   - "aws-helios": Table 4.2 (identical to Table 5.1), the Helios chapter's regions in the order
//     V, O, C, I, S with the mean RTT and its standard deviation (spec §6.1.2). Where the source
//     gives two standard deviations for a pair, the spec's resolution is used: C–I 6.5, O–S 4.4.
//
// Seed 003 (S-DUR, specs/sdur.md §4) adds two: "sdur-wan1" (EU and US-EAST, two availability
// zones each: eu-1, eu-2, use-1, use-2; RTT 90 ms between the regions, 1 ms between zones) and
// "sdur-wan2" (eu, use, usw; RTTs 90, 170, 100 ms), both with ±5% jitter. Their replica
// placements are in partitioned.PlacementFor.
//
// The experiments' sub-scenarios (MF's CO, COV, COVI) are made with Subset.
//
// The ALVIN spec (specs/alvin.md §7.1) adds four presets over its seven EC2 sites VA
// (us-east-1), OR (us-west-2), IE (eu-west-1), SP (sa-east-1), TK (ap-northeast-1), SG
// (ap-southeast-1) and SY (ap-southeast-2):
//
//   - "aws-7": measured RTTs, each pair the mean of both directions' average ping RTT (and of
//     their mdev as the standard deviation) from the AWS measurements of 2020-06-05 published
//     with the fantoch project (github.com/vitorenesduarte/fantoch, latency_aws/2020_06_05).
//   - "aws-5" and "aws-3": its subsets of the spec's 5-site {VA, OR, IE, TK, SG} and 3-site
//     {VA, IE, TK} configurations.
//   - "alvin-paper-7": the spec's assumed table (circa 2014–2015), no jitter.
//
// Both AWS presets violate the triangle inequality for some triples (for example RTT(V,S) = 268 >
// RTT(V,C) + RTT(C,S) = 78 + 182 in Table 4.2), as measured Internet paths do; Validate reports
// such triples as warnings, not errors.
//
// # File format
//
// Load accepts a preset name or a path to a YAML (.yaml, .yml) or JSON (.json) file:
//
//	name: three-dcs            # optional; defaults to the file's base name without extension
//	datacenters: [A, B, C]     # names: ASCII letters, digits, '-' and '_'
//	rtt_ms:                    # each unordered pair at least once; both directions may be given
//	  A: {B: 30, C: 20}
//	  B: {C: 40}
//	stddev_ms:                 # optional, same shape; missing pairs mean 0
//	  A: {B: 1.5}
//
// The JSON form uses the same keys:
//
//	{"datacenters": ["A", "B", "C"],
//	 "rtt_ms": {"A": {"B": 30, "C": 20}, "B": {"C": 40}},
//	 "stddev_ms": {"A": {"B": 1.5}}}
//
// RTTs and standard deviations are in milliseconds and must be finite and non-negative. A pair
// given in both directions must carry the same value. Unknown fields, unknown or repeated
// datacenter names, duplicate keys and entries from a datacenter to itself are errors. Every
// error is one line naming the file and the offending entry, for example
//
//	topology net/three-dcs.yaml: rtt_ms: missing RTT between A and C
//
// # Jitter
//
// StdDevMs is the standard deviation of the round trip. The emulator (spec §6.2) turns it into a
// one-way jitter drawn from Normal(0, (σ/√2)²), truncated at ±3σ/√2, added to RTT/2.
package topology
