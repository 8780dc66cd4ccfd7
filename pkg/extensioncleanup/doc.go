// Package extensioncleanup gives OLM v1 users what pkg/operandcleanup gives OLM v0 users: an uninstall
// in which the operator finalizes its custom resources before its CRDs, Deployment and RBAC go. Deleting
// a ClusterExtension (operator-controller v1.2.0) lets the garbage collector (GC) take everything it
// owns at once: deleting a CRD deletes every CR of its kind, the operator is often gone first, and CRs
// with finalizers stay Terminating (docs/olm-v1.md). Upstream has no ordered uninstall and no orphan
// policy (operator-controller #775); both are this project's opt-ins, not OLM API.
//
// It runs in the operand-cleanup binary (operandcleanup.Main adds it with AddWhenServed once the
// ClusterExtension API is served) and deletes with pkg/cleanuppass, the same pass as the OLM v0
// controller: live paged lists, UID preconditions, a live re-verification at most 1 s old before every
// Delete, a live list before letting the operator go.
//
// # Rules
//
//   - The annotation UninstallAnnotation (cleanup-e2e.io/uninstall) on a ClusterExtension chooses:
//     ModeDeleteOperands ("delete-operands"), ModeOrphan ("orphan"); absent is OLM v1's own uninstall; an
//     unknown value is reported (Warning InvalidAnnotation) and treated as absent.
//   - Opted in and installed: Finalizer on the ClusterExtension; the holder's owner reference on what must
//     outlive its deletion (delete-operands: the operator's Deployments, ServiceAccounts, ClusterRoles,
//     ClusterRoleBindings, Roles, RoleBindings, the CRDs and the helm release's index Secret; orphan: the
//     CRDs and that Secret), appended after operator-controller's controller reference, re-checked every
//     Options.HoldResync. The holder is the controller's own ClusterRole (DefaultHolderName), a live
//     cluster-scoped object: the GC never deletes
//     an object with a live owner (kube-controller-manager garbagecollector.go attemptToDeleteItem, the
//     "solid" owners case), it only strips the references to owners that are gone or deleting in
//     foreground. So both propagation policies are held: background by the finalizer (the GC starts on
//     dependents only once the owner is gone from storage), foreground by the holder until the controller
//     removes the GC's foregroundDeletion finalizer (the GC would delete blocking dependents at once, and
//     a Deployment deleted in foreground loses its pods however it is finalized); from then on a
//     foreground deletion is held as a background one (invariant 6, event ForegroundEnded). A finalizer
//     on the ServiceAccount would not do: kube-apiserver rejects a bound token of a ServiceAccount
//     deleted more than jwt.DefaultLeeway (60 s) ago (pkg/serviceaccount/claims.go).
//   - The extension's objects are found, live, by operator-controller's labels
//     olm.operatorframework.io/owner-kind=ClusterExtension and owner-name=<name>, and are the
//     ClusterExtension's only with its UID in their owner references (or, once the GC stripped it in a
//     foreground deletion, the holder's reference).
//   - delete-operands, on deletion: while one of the operator's Deployments has an available replica,
//     passes delete the CRs of the extension's CRDs in the namespaces its operator watches
//     (olm.targetNamespaces on the Deployments' pod templates; empty or absent: all namespaces, as v1.2.0
//     installs without the SingleOwnNamespaceInstallSupport gate); the condition ConditionType
//     (cleanup-e2e.io/Uninstall) carries the pending count and the first Options.MaxPendingListed CRs
//     with their finalizers; once none is left, checked live, the holds are released, the condition says
//     CleanupCompleted (and an event), and the finalizer goes gcSettle later: the GC then removes the rest as upstream.
//   - orphan, on deletion: the CRDs lose the ClusterExtension's and the holder's references and get
//     OrphanedFromAnnotation in the same write (orphanedRefs): the CRDs (and every CR) stay with no owner,
//     and the orphan guard refuses any late operator-controller write giving them back to the
//     ClusterExtension; everything else is released and goes as upstream removes it. Only while the
//     orphan guard is in force (invariant 7); until then the uninstall waits, CleanupBlocked. helm's ownership
//     metadata (label app.kubernetes.io/managed-by: Helm, annotations meta.helm.sh/release-name and
//     release-namespace) is left as is: a ClusterExtension of the same name and namespace installs again
//     and adopts them (helm's existingResourceConflict); another name or namespace is refused by helm, as
//     for any object of another release.
//   - Opt-out (annotation removed, before or during the uninstall, or during the settle after an
//     orphan release) releases at once; a deleted ClusterExtension then goes as upstream removes it, its
//     CRDs too.
//
// # Safety invariants
//
//  1. A CR is deleted only by a pass of a ClusterExtension X that, read from the API server at most 1 s
//     before the Delete, exists with the same UID, is being deleted, carries Finalizer and is opted in
//     with delete-operands; the CR's kind is one of X's CRDs, not being deleted, that no other
//     ClusterExtension references and no OLM v0 CSV owns or requires (the former are left and named in
//     the condition, those already being deleted waited for, as the other extension may let the CRD go
//     first; the latter block the uninstall: invariant 4); its namespace is one X's operator
//     watches (cluster-scoped only for an operator watching all namespaces); it is the very object
//     listed (UID precondition).
//  2. Nothing is deleted for a ClusterExtension that is not being deleted: an upgrade that drops a CRD is
//     helm's own Delete (the holder's reference does not stop an explicit Delete), and the CRD's CRs are
//     left to it: the CRs of a CRD being deleted are never deleted by this controller, but an uninstall
//     waits for them (in the operator's namespaces) like for any other, so that the operator is not let
//     go while it still has them to finalize (a foreign finalizer on one stalls it, explained).
//  3. No Delete goes out while none of X's Deployments has an available replica: the condition says
//     OperatorNotRunning or OperatorGone, naming the Deployment, and a Warning event repeats it.
//  4. The operator is let go (holds released, Finalizer removed) only after a pass found nothing pending
//     and a live list confirms that no CR of the plan is left, and never while an OLM v0 CSV owns or
//     requires one of X's CRDs: OLM v0 never deletes a CRD, but the GC deletes this one, and every CR of
//     it, once X is gone, and those CRs are not X's alone to delete first (CleanupBlocked names the CSV
//     until it no longer claims the CRD; an opt-out releases, as always). A CR another finalizer holds
//     keeps X for as long as it stays; after Options.StallTimeout the condition (CleanupStalled) and a
//     Warning event name it and its finalizers.
//  5. An opt-out is the user's explicit release: nothing more is deleted, everything is released at once.
//     The controller never writes UninstallAnnotation.
//  6. Releasing leaves what the GC would have left: no object of X is left with neither X's reference
//     nor the holder's. The holder's reference goes before Finalizer, and an object the GC stripped of
//     X's reference gets it back. The holder's is added only while X, read live (same UID), carries
//     Finalizer (hold; a deleted X is acted on only as read live), so nothing is held again once release
//     began. The GC strips X's reference beside the live holder when X waits for its dependents
//     (foregroundDeletion) or is gone, with a patch that has no resourceVersion, decided from a read of
//     the object and then one of X (garbagecollector.go attemptToDeleteItem): one decided while the
//     holder was there and applied after release removed it leaves nothing. So the controller removes
//     foregroundDeletion from a held X at its first reconcile of the deletion (operator-controller
//     would otherwise give X's reference back and the GC strip it again for as long as the hold lasts)
//     and does nothing for gcSettle, unless the GC ended the wait first (it does once no dependent it
//     observed carries a blocking reference to X, so its strips have landed:
//     processDeletingDependentsItem); and after release X keeps Finalizer for gcSettle (letGo, which
//     releases again and waits again if anything changed), so X is neither waiting nor gone while a
//     strip decided before the release can still land. The sweep leaves the holder's reference
//     to an armed ClusterExtension of X's name (its release gives its reference back); an object it takes
//     the holder's reference from once X is gone (X deleted while the controller was down) loses X's
//     reference too and gets one to the gone X under a fresh UID (sweptRefs): a strip decided while the
//     holder was there names X's UID and finds nothing, and the GC finds the new owner absent and deletes
//     the object, as it would have without the hold. The controller never deletes these objects
//     itself (it has no delete verb on them).
//  7. No CRD is marked OrphanedFromAnnotation unless the orphan guard (OrphanGuardName: a
//     ValidatingAdmissionPolicy and its binding, config/operand-cleanup/40-orphan-guard.yaml), read live,
//     is in force. It refuses any write that gives a marked CRD a reference to the ClusterExtension the
//     mark names, unless the same write removes the mark (an opt-out's release). So once marked, no late
//     operator-controller reconcile of the gone ClusterExtension can hand the CRD to the garbage
//     collector, whenever it comes: while the ClusterExtension waits out gcSettle, after it went, or
//     once a ClusterExtension of the same name adopted the CRD. The guard also keeps a held
//     CRD's holder reference from any write that leaves HeldByAnnotation in place (see below).
//  8. An opted-in ClusterExtension (a valid UninstallAnnotation) not being deleted cannot be deleted
//     without Finalizer: the unarmed guard (UnarmedGuardName, config/operand-cleanup/41-unarmed-guard.yaml)
//     refuses the delete, naming the two ways out (wait for the controller to arm it, or opt out). The
//     controller arms an opted-in ClusterExtension at its first reconcile of it; without the guard one
//     deleted before that (the controller down, or a delete right after the annotation) got upstream's
//     uninstall. A foreground delete is refused, too, until the condition says Holding for the
//     annotation's mode (its message starts with "<mode>:", set by arm once the holds are in place):
//     the GC deletes a foreground-deleted owner's dependents first, and only the holds keep them.
//
// The windows left: a ClusterExtension deleted before the controller armed it while the unarmed guard
// is not in force (not applied, or applied moments ago: the API server enforces a new policy once its
// informers have it) is upstream's uninstall; objects an upgrade added are held at the next reconcile,
// and a foreground deletion before then takes them; between a verification and the Deletes relying on
// it (≤ 1 s); a strip the GC took more than gcSettle to apply. The orphan guard closes the window a foreground deletion opened
// until foregroundDeletion goes: the GC strips the ClusterExtension's reference from a held CRD at once,
// and operator-controller v1.2.0, which keeps reconciling a deleted ClusterExtension (no
// deletionTimestamp check in ClusterExtensionReconciler.reconcile), would replace the holder's reference,
// first in the list then, with the ClusterExtension's; the GC would then delete the CRD with the
// ClusterExtension's dependents. A held CRD carries HeldByAnnotation, written with the holder's reference
// (setRefs), and the guard refuses a write that drops the reference but keeps the mark.
//
// Helm keeps the holder's reference: helm-operator-plugins v0.8.0 actionClient.Reconcile
// (pkg/client/actionclient.go createPatch) patches a CRD with a JSON patch of existing → expected minus
// every "remove" operation (a trailing extra reference only yields removes), other kinds with a three-way
// strategic merge whose original is the manifest itself (ownerReferences merge by UID: nothing deleted);
// helm v3.17.1 Client.Update (pkg/kube/client.go createPatch) diffs the old and new manifests, which
// never contain the holder. RBAC objects may be patched so: ownerReferences-only changes skip the
// escalation checks (k8s.io/kubernetes pkg/registry/rbac IsOnlyMutatingGCFields).
package extensioncleanup
