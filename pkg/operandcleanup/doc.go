// Package operandcleanup implements OLM's "olm-deletes-operands" enhancement beside stock OLM: when a user
// opts a ClusterServiceVersion in (spec.cleanup.enabled: true) and later deletes it, every custom resource
// of the CSV's owned CRDs in the operator's target namespaces is deleted, and the CSV (with the operator
// Deployment it owns) is held by a finalizer until those CRs are gone, so the operator can run its own
// finalizers.
//
// # Rules
//
//   - Only the installation is acted on: copied CSVs (label olm.copiedFrom, status.reason Copied) are not
//     even cached, and never get the finalizer.
//   - spec.cleanup.enabled true ⇒ finalizer operatorframework.io/cleanup-apis; false/unset ⇒ none (removed
//     if present). Setting it false while the CSV is pending deletion aborts the cleanup: no Delete
//     goes out on a check older than 1 s (below).
//   - Deleted: instances of spec.customresourcedefinitions.owned, resolved by name from the live CRD
//     (group, served version, kind, scope), in the target namespaces: annotation olm.targetNamespaces,
//     else status.namespaces of the single OperatorGroup of the CSV's namespace; "" = all namespaces.
//     Never: instances of required CRDs (a CRD both owned and required counts as required), CRDs
//     themselves, anything outside the targets, cluster-scoped instances unless the operator is global.
//     Missing targets (no annotation, no or several OperatorGroups) block the cleanup with a status
//     message and a Warning event; an owned CRD that is not installed is skipped with a note.
//   - Targets that change during the uninstall: OLM keeps rewriting olm.targetNamespaces on a deleted CSV
//     when its OperatorGroup changes, but no longer rolls the operator's Deployment. Before its first
//     Delete the controller records the namespaces the operator watches (UninstallTargetsAnnotation:
//     olm.targetNamespaces of the Deployments' pod templates, else the CSV's targets). Deletes go only to
//     namespaces that are targets now and were then; the cleanup completes only when no operand is being
//     deleted in a namespace the operator watched then, whoever deleted it.
//   - Upgrades never clean up: a CSV with a successor (a CSV of its namespace with spec.replaces naming
//     it, accepted by OLM or not, even one being deleted) hands spec.cleanup.enabled: true to its
//     successors when it has it, and loses the finalizer once it is deleted while a successor stays or
//     OLM deletes it as replaced (phase Deleting, reason Replaced); until then it keeps it (see below).
//     Its own spec.cleanup.enabled is never changed. A successor deleted while the CSV it replaces is
//     still installed is not an uninstall either (status CleanupSkipped). The enhancement
//     ("Handling CSV deletion due to replacement") has OLM opt the replaced CSV out and copy the value
//     whatever it is; here nothing is opted out (an uninstall mid-upgrade must still clean up, below)
//     and only true is handed over (a successor's own opt-in is not taken away).
//   - The operator's namespaced RBAC (Roles/RoleBindings OLM made in its namespace and copied into its
//     target namespaces, labels olm.owner*, olm.copiedFrom) is held the same way: deleting a target
//     namespace during the cleanup would otherwise take the operator's permissions there with it. When the
//     operator cannot finish any more (its Deployment gone or being deleted, its namespace terminating),
//     the status says so (reason OperatorGone) and a Warning event names it; while none of its
//     Deployments has an available replica (scaled to 0, crashing), reason OperatorNotRunning says that.
//   - OLM (≥0.27) deletes a CSV's cluster RBAC (olm.owner* labels) as soon as the CSV is deleted, while
//     the operator still needs it for its finalizers. While cleanup is enabled (and the CSV is not being
//     replaced) this controller puts RBACFinalizer on the ClusterRoles/ClusterRoleBindings OLM made for
//     exactly that CSV (olm.owner, olm.owner.namespace, olm.owner.kind=ClusterServiceVersion: its
//     clusterPermissions and, for AllNamespaces operators, the ClusterRoles/Bindings OLM lifts from the
//     namespaced permissions, which copy those labels). OLM's delete then only sets a deletionTimestamp;
//     the RBAC authorizer keeps honouring the objects, so the operator keeps exactly its own permissions.
//     The finalizer is removed when the cleanup completes or is aborted, when cleanup is disabled, when
//     the CSV is being replaced (OLM must delete the old CSV's RBAC) and when the CSV is gone; a sweep at
//     start and every ResyncInterval releases objects whose CSV vanished (e.g. while the controller was
//     down) or whose labels no longer name a CSV. No RBAC object is ever created or changed otherwise, so
//     the controller's ClusterRole needs only get/list/watch/patch on clusterroles/clusterrolebindings
//     (finalizer-only patches are exempt from the escalation checks): no create, escalate or bind.
//   - Safety: operands are deleted with a UID precondition; before each Delete whose last check is
//     1 s old or more, the CSV, its successors, targets and owned/required CRDs are re-read from the
//     API server; each object is re-checked against that plan. The finalizer is removed only
//     after a live list confirms that no operand is left.
//
// # Safety invariants
//
// Every one is checked by the randomized lifecycle test (lifecycle_*_test.go), which records every operand
// deletion and fails on any the invariants forbid.
//
//  1. An operand is deleted only by a cleanup pass of a CSV X that, read from the API server right before
//     the pass, exists with the same UID, is being deleted, carries Finalizer, has spec.cleanup.enabled
//     true, is not an OLM copy, has no successor that stays (one not being deleted, directly or through
//     successors that are) and is not deleted by OLM as replaced; the operand's type
//     is owned and not required by X, its namespace is one of X's targets both now and when the uninstall
//     began (cluster-scoped only for an X global then and now), and it is the very object listed (UID
//     precondition).
//  2. X is the whole installation: the CSV X replaces (spec.replaces) does not exist any more or is being
//     deleted. Otherwise deleting X is an aborted upgrade, not an uninstall: nothing is deleted.
//  3. No other installation serves the operand: no other CSV anywhere (not copied, not being deleted) owns
//     its CRD with the operand's namespace among its targets (for cluster-scoped types: owns it at all),
//     and no OLM v1 ClusterExtension installed the CRD too (its reference on the CRD, or the hold of its
//     ordered uninstall: counted as serving every namespace, extensionClaim).
//     Such operands are left in place and named in the status message; one already being deleted where
//     the operator watched is still waited for (invariant 7: the other installation may go first, as a
//     ClusterExtension that claimed the CRD after the cleanup's deletes and let it go). One whose
//     targets OLM has not set yet blocks the cleanup until it has (nothing is deleted meanwhile); one
//     OLM failed for want of a single OperatorGroup counts as serving every namespace.
//  4. An opt-in is never lost: the controller never sets spec.cleanup.enabled to false; it copies true to
//     successors, and a CSV whose successor vanished keeps the user's value.
//  5. A cleanup that cannot finish says why in the CSV's status (phase Cleanup with WaitingOnCleanup and
//     the pending list, OperatorGone when the operator's Deployment or namespace is going,
//     OperatorNotRunning while it has no available replica, or a blocked
//     message), and one that is over says so (phase Deleting, reason CleanupCompleted, CleanupAborted or
//     CleanupSkipped) before the finalizer goes.
//  6. RBAC is held only for a CSV that, read live, still wants it (invariant 1's CSV conditions minus the
//     deletion): a reconcile working from a stale cache never holds the RBAC of a finished cleanup again.
//  7. The operator is let go (the finalizer removed after a completed cleanup) only when no operand is being
//     deleted in a namespace it watched when the uninstall began: a CR the cleanup deleted is never left
//     Terminating with nobody to remove its finalizers. (An abort is the user's explicit release: it lets
//     the operator go at once, and says so.)
//
// Before the first reconcile of an opt-in the CSV is not armed: deleted then, its operator would go and
// its operands stay, their finalizers never to run. The unarmed guard (UnarmedGuardName, a
// ValidatingAdmissionPolicy in config/operand-cleanup/42-unarmed-csv-guard.yaml; TestUnarmedGuard)
// refuses that delete, naming the ways out (wait for Finalizer, or opt out); it leaves alone OLM's copies,
// a CSV OLM deletes as replaced (phase Deleting) and one already being deleted. It refuses a foreground
// delete of an opted-in CSV even once armed: the garbage collector would delete what the CSV owns, the
// operator's Deployment first, while Finalizer keeps the CSV for a cleanup with no operator left to
// finalize (OLM never deletes a CSV so; a background delete, the default, is what the cleanup holds).
// Where the policy is not in force (not applied, or applied moments ago), the deletion is OLM's own,
// without operand cleanup, and a foreground one loses the operator first.
//
// The one window left: between a live re-verification and the Deletes that rely on it (sent within 1 s
// of it, plus the time a Delete already sent takes), a new successor or installation can appear; the
// pass still deletes what it verified, then stops at the next check.
//
// An uninstall in the middle of an upgrade may delete the new CSV first: its cleanup is skipped (the
// old CSV is still installed), and the old CSV's deletion, which then finds no successor that stays,
// is the uninstall and cleans up. So a replaced CSV keeps its finalizer (as its opt-in says) until it is
// deleted while a successor stays or OLM marks it replaced: dropped when a successor first appeared,
// such an uninstall would leave the operands behind.
//
// # Decisions where the enhancement and the operator-framework/api types differ (the API wins)
//
//   - status.cleanup.pendingDeletion is []v1alpha1.ResourceList{Group, Kind, Instances[]{Name,
//     Namespace}}, not the enhancement's flat {resource, kind, version, name, namespace} list. It is
//     bounded (Options.MaxPendingListed, default 100, in a stable group/kind/namespace/name order); the
//     message always carries the total.
//   - The reason is v1alpha1.CSVReasonWaitingForCleanupToComplete ("WaitingOnCleanup"), not
//     "CleanupWaiting". The phase is the string "Cleanup" (the API has no constant; phase is free-form).
//   - status.conditions follows the API's SetPhase semantics: an entry is appended when phase or reason
//     change (trimmed to v1alpha1.ConditionsLengthLimit). While only the message changes (pending
//     count), SetPhase would leave the latest entry's message stale; this controller updates that
//     entry — its own — in place, and appends none (one per step would push OLM's history out of the
//     20-entry window).
//
// Where they agree: spec.cleanup is a non-pointer struct with a required "enabled" field, so "unset"
// and false are the same state, as the enhancement's unspecified default is.
//
// Beyond the enhancement, which has OLM add the finalizer and says nothing of a deletion that comes
// first: the unarmed guard (above) refuses that deletion.
//
// # Status ownership
//
// OLM stops writing a CSV's status once it has a deletionTimestamp; this controller writes it only from
// then on (never before deletion), as a JSON merge patch of the changed status fields guarded by
// resourceVersion, at most every Options.StatusUpdateInterval while only the pending list changes.
//
// # Scale
//
// Operands are never cached. A cleanup pass (pass.go) lists them live, Options.ListPageSize (500) per
// page (continue tokens), deletes as it goes, and keeps only the pending count and the first
// MaxPendingListed pending operands, so the controller's memory does not grow with the number of CRs.
// While a cleanup needs a GroupKind, one metadata watch of it (watches.go) requeues the CSVs concerned
// on creates and deletes and stores nothing; Options.ResyncInterval is only a backstop. A pass that
// deleted nothing waits as long as it took before the next one, so re-listing a large pending cleanup
// keeps the API server busy at most half the time. Deletes run concurrently under a controller-wide
// bound (Options.DeleteConcurrency).
//
// Stalls: when the pending count has not decreased for Options.StallTimeout (or the CSV's
// StallTimeoutAnnotation), a CleanupStalled Warning event names the blocking CRs and their finalizers.
// The stall clock survives restarts: the latest status condition (this controller's Cleanup /
// WaitingOnCleanup entry) carries the time of the last progress in its lastTransitionTime (so, unlike
// SetPhase, it moves when the pending count decreases) and the pending count in its message.
// Metrics: operand_cleanup_pending_resources{namespace,csv}, operand_cleanup_duration_seconds{result},
// operand_cleanup_deletes_total{result}, operand_cleanup_stalled_total{namespace,csv}.
//
// Entry points: Main (binary and local runtime, docs/CONTRACTS.md) and New(mgr, Options).SetupWithManager
// (with a manager built from NewScheme and CacheOptions).
package operandcleanup
