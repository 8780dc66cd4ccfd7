// Package cleanuppass is the deletion core shared by this project's cleanup controllers: the OLM v0
// operand-cleanup controller (pkg/operandcleanup, a CSV's operands) and the OLM v1 ordered uninstall
// (pkg/extensioncleanup, a ClusterExtension's custom resources). It exists so that both delete under the
// same rules, written and tested once, instead of two copies drifting apart.
//
// A Runner lists the objects a Plan names live from the API server, page by page (never cached), and
// deletes those not yet being deleted:
//
//   - every Delete carries a UID precondition: a name taken over by a newer object is never deleted;
//   - every Delete goes out on a live re-verification of the plan (Verification) at most
//     Runner.ReverifyEvery old, and each object is re-checked against that plan (Plan.Allows) right
//     before its Delete; a plan that no longer holds stops the pass (ErrPlanChanged) before the next one;
//   - Deletes run under a semaphore shared by the caller's whole controller;
//   - a pass keeps only the pending count and the first Runner.MaxListed pending objects, so memory
//     does not grow with the number of objects;
//   - AnyLive is the last check a caller makes, live, before it lets an operator go: a CR created after
//     a pass listed its namespace is not missed.
//
// What may be deleted, and what keeps a cleanup pending, is the caller's Plan; this package never decides
// it.
package cleanuppass
