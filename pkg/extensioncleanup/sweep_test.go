package extensioncleanup

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cleanup-e2e/cleanup-e2e/internal/seeded"
	"github.com/cleanup-e2e/cleanup-e2e/internal/shrink"
)

// sweepCase is one object the sweep finds held for the ClusterExtension "widget": its owner references
// (the holder's among them), which of them are live, and the live ClusterExtension of the name, if any.
type sweepCase struct {
	refs    []metav1.OwnerReference
	live    map[types.UID]bool
	liveUID types.UID
}

const sweepHolder = types.UID("holder")

// TestSweptRefsLeaveWhatTheGCWouldHave plays, on seeded random owner references, the GC against the
// sweep: a strip of the dangling references decided from a read taken before the sweep lands after it,
// then the GC runs to its end. The object must end as the GC would have left it without the hold
// (deleted when no owner but the holder is live, kept otherwise) and never without an owner reference.
// internal/seeded's CLEANUP_E2E_SEED replays one case as printed by a failure.
func TestSweptRefsLeaveWhatTheGCWouldHave(t *testing.T) {
	cfg, err := seeded.Read(seeded.Config{Sequences: 2000, Shrink: 50})
	if err != nil {
		t.Fatal(err)
	}
	for seed := range cfg.Seeds() {
		c := randomSweepCase(rand.New(rand.NewSource(seed)))
		v := c.violations()
		if len(v) == 0 {
			continue
		}
		refs, v := shrink.Chunks(c.refs, v, cfg.Shrink, func(refs []metav1.OwnerReference) []string {
			return sweepCase{refs: refs, live: c.live, liveUID: c.liveUID}.violations()
		})
		t.Fatalf("seed %d (replay with %s go test ./pkg/extensioncleanup -run %s): owner references %s (live ClusterExtension %q): %v",
			seed, cfg.Replay(seed), t.Name(), describeRefs(refs, c.live), c.liveUID, v)
	}
}

func randomSweepCase(rnd *rand.Rand) sweepCase {
	ce := func(name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: ClusterExtensionGVK.GroupVersion().String(), Kind: ClusterExtensionGVK.Kind, Name: name, UID: types.UID(uid)}
	}
	pool := []metav1.OwnerReference{
		ce("widget", "widget-a"), ce("widget", "widget-b"), ce("gadget", "gadget-a"),
		{APIVersion: "v1", Kind: "ConfigMap", Name: "foreign", UID: "foreign"},
	}
	c := sweepCase{live: map[types.UID]bool{sweepHolder: true}}
	for _, ref := range pool {
		if rnd.Intn(2) == 0 {
			c.refs = append(c.refs, ref)
		}
		c.live[ref.UID] = rnd.Intn(2) == 0
	}
	c.live["widget-a"], c.live["widget-b"] = false, false
	if i := rnd.Intn(3); i > 0 {
		// A new ClusterExtension of the name the object does not reference (sweepOne leaves one it
		// references to its reconcile).
		c.liveUID = types.UID(fmt.Sprintf("widget-new-%d", i))
		c.live[c.liveUID] = true
	}
	holder := metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: DefaultHolderName, UID: sweepHolder}
	at := rnd.Intn(len(c.refs) + 1)
	c.refs = slices.Insert(c.refs, at, holder)
	return c
}

// violations compares the GC's end state after the sweep with its end state without the hold.
func (c sweepCase) violations() []string {
	var v []string
	if !slices.ContainsFunc(c.refs, func(r metav1.OwnerReference) bool { return r.UID == sweepHolder }) {
		return nil // not held: the sweep leaves it
	}
	pending := c.strips(c.refs) // decided before the sweep, applied after it
	refs := slices.DeleteFunc(sweptRefs(c.refs, "widget", c.liveUID, sweepHolder), func(r metav1.OwnerReference) bool {
		return slices.Contains(pending, r.UID)
	})
	if slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == sweepHolder }) {
		v = append(v, "the holder's reference stays")
	}
	gotDeleted, gotRefs := c.collect(refs)
	// Without the hold the object keeps its reference to the ClusterExtension that installed it (the GC
	// strips it only beside the live holder): one that is absent.
	unheld := slices.DeleteFunc(slices.Clone(c.refs), func(r metav1.OwnerReference) bool { return r.UID == sweepHolder })
	wantDeleted, _ := c.collect(append(unheld, metav1.OwnerReference{Kind: ClusterExtensionGVK.Kind, Name: "widget", UID: "widget-installer"}))
	switch {
	case !gotDeleted && len(gotRefs) == 0:
		v = append(v, "left with no owner reference: the GC never deletes it")
	case gotDeleted != wantDeleted:
		v = append(v, fmt.Sprintf("deleted %t, without the hold %t (ends with %s)", gotDeleted, wantDeleted, describeRefs(gotRefs, c.live)))
	}
	return v
}

// strips are the references the GC removes from an object with refs: the dangling ones, when a live
// owner remains (garbagecollector.go attemptToDeleteItem, solid owners).
func (c sweepCase) strips(refs []metav1.OwnerReference) []types.UID {
	var dangling []types.UID
	solid := false
	for _, r := range refs {
		if c.alive(r) {
			solid = true
		} else {
			dangling = append(dangling, r.UID)
		}
	}
	if !solid {
		return nil
	}
	return dangling
}

// collect runs the GC on refs to its end: deleted when every owner is absent, else stripped of the
// absent ones. An object with no owner reference is never touched.
func (c sweepCase) collect(refs []metav1.OwnerReference) (deleted bool, _ []metav1.OwnerReference) {
	if len(refs) == 0 {
		return false, nil
	}
	if !slices.ContainsFunc(refs, c.alive) {
		return true, nil
	}
	return false, slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return !c.alive(r) })
}

// alive: the owner exists with that UID; a reference the sweep made up (a fresh UID) names none.
func (c sweepCase) alive(r metav1.OwnerReference) bool { return c.live[r.UID] }

func describeRefs(refs []metav1.OwnerReference, live map[types.UID]bool) string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		state := "absent"
		if live[r.UID] {
			state = "live"
		}
		out = append(out, fmt.Sprintf("%s/%s/%s(%s)", r.Kind, r.Name, r.UID, state))
	}
	return fmt.Sprint(out)
}
