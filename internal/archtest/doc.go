// Package archtest holds the test that keeps docs/architecture.md §1 true:
// its table of packages, and what each may import, is compared with what
// `go list` says the code imports. The package has no code of its own; the
// check lives in its test so that `make test` (go test ./...) runs it.
package archtest
