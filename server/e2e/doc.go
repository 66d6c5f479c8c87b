// Package e2e holds end-to-end tests that build the meridian binary and run real multi-process
// clusters on this machine, with emulated WAN delays, through the client library: the checker
// must accept every run, including runs where nodes are killed with SIGKILL and restarted. It
// has no non-test code beyond this comment.
package e2e
