// Package deletestate holds the randomized sequence test of the payload applier's delete state
// (tests only): seeded random payload versions — objects marked, unmarked, dropped, re-added, given
// invalid annotation values — applied in install, update and reconcile mode, with applier restarts,
// finalizers released and objects deleted or recreated behind the applier's back, each step checked
// against a small reference model of the CVO's rules (model_test.go).
package deletestate
