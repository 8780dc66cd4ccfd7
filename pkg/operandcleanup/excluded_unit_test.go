package operandcleanup

import (
	"cmp"
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// widgetsReader is an API server of one CRD (widgets.g), some CSVs and Widgets (metadata only), which
// pages lists as the API server does (Limit, Continue).
type widgetsReader struct {
	csvs    []v1alpha1.ClusterServiceVersion
	widgets []metav1.PartialObjectMetadata
	crd     *apiextensionsv1.CustomResourceDefinition // widgetsCRD when nil
}

var widgetsCRD = &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.g"},
	Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "g", Scope: apiextensionsv1.NamespaceScoped,
		Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets"},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}}}}

func (s *widgetsReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if c, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok && key.Name == widgetsCRD.Name {
		*c = *cmp.Or(s.crd, widgetsCRD).DeepCopy()
		return nil
	}
	return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
}

func (s *widgetsReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	switch l := list.(type) {
	case *v1alpha1.ClusterServiceVersionList:
		for _, c := range s.csvs {
			if (lo.LabelSelector == nil || lo.LabelSelector.Matches(labels.Set(c.Labels))) && (lo.Namespace == "" || lo.Namespace == c.Namespace) {
				l.Items = append(l.Items, c)
			}
		}
	case *metav1.PartialObjectMetadataList:
		var items []metav1.PartialObjectMetadata
		for _, w := range s.widgets {
			if lo.Namespace == "" || lo.Namespace == w.Namespace {
				items = append(items, w)
			}
		}
		sort.Slice(items, func(i, j int) bool {
			return items[i].Namespace+"/"+items[i].Name < items[j].Namespace+"/"+items[j].Name
		})
		from, _ := strconv.Atoi(lo.Continue)
		items = items[min(from, len(items)):]
		if lo.Limit > 0 && int64(len(items)) > lo.Limit {
			items = items[:lo.Limit]
			l.Continue = strconv.Itoa(from + int(lo.Limit))
		}
		l.Items = items
	}
	return nil // OperatorGroups: none
}

func widgetCSV(ns, uid, targets string) v1alpha1.ClusterServiceVersion {
	c := v1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "widget.v1", UID: types.UID(uid),
		Annotations: map[string]string{targetNamespacesAnno: targets}}}
	c.Spec.CustomResourceDefinitions.Owned = []v1alpha1.CRDDescription{{Name: "widgets.g", Version: "v1", Kind: "Widget"}}
	c.Spec.Cleanup.Enabled = true
	return c
}

func widgetIn(ns, name string) metav1.PartialObjectMetadata {
	return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name)}}
}

// The last check before a CSV's finalizer goes counts only what its plan may delete. It counted the
// operands another installation also serves, which the pass leaves by design (invariant 3): with a
// second widget installation in team-a (OLM rejects an intersecting one, but its CSV stays), the
// uninstall of the first found nothing pending and requeued every second for ever, its status silent.
// It must still see an allowed operand created after the pass, also behind excluded ones on a later
// page of a cluster-wide list.
func TestTheLastCheckCountsOnlyWhatThePlanMayDelete(t *testing.T) {
	shared := widgetCSV("team-a", "y", "team-a")
	for _, c := range []struct {
		name    string
		csv     v1alpha1.ClusterServiceVersion
		targets string
		created []metav1.PartialObjectMetadata // after the pass
		live    bool
	}{
		{name: "global", csv: widgetCSV("operators", "x", ""), live: false},
		{name: "global, an allowed widget behind excluded ones", csv: widgetCSV("operators", "x", ""), live: true,
			created: []metav1.PartialObjectMetadata{widgetIn("team-a", "w2"), widgetIn("team-a", "w3"), widgetIn("team-b", "w4")}},
		{name: "namespaced", csv: widgetCSV("op", "x", "a,team-a"), targets: "a,team-a", live: false},
		{name: "namespaced, an allowed widget", csv: widgetCSV("op", "x", "a,team-a"), targets: "a,team-a", live: true,
			created: []metav1.PartialObjectMetadata{widgetIn("a", "w2")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			// elsewhere serves none of the namespaced plan's targets; listed after shared, it once got
			// named in the notes beside it.
			elsewhere := widgetCSV("z", "z", "z")
			s := &widgetsReader{csvs: []v1alpha1.ClusterServiceVersion{c.csv, shared, elsewhere}, widgets: []metav1.PartialObjectMetadata{widgetIn("team-a", "w1")}}
			p, err := buildPlan(ctx, s, s, &c.csv, parseTargets(c.targets, "test"))
			if err != nil {
				t.Fatal(err)
			}
			if notes := strings.Join(p.notes, "; "); c.targets != "" && strings.Contains(notes, "z/widget.v1") {
				t.Fatalf("the notes name CSV z/widget.v1, which serves none of the targets %s: %q", c.targets, notes)
			}
			if p.allows(schema.GroupKind{Group: "g", Kind: "Widget"}, "team-a") == nil {
				t.Fatalf("the plan may delete team-a's widgets, which CSV team-a/widget.v1 also serves (notes %q)", p.notes)
			}
			r := &Reconciler{opts: Options{}.withDefaults(), live: s, deleteSem: make(chan struct{}, 4), pageSize: 2}
			res, err := r.runPass(ctx, &c.csv, p)
			if err != nil || res.Pending != 0 || res.Deleted != 0 {
				t.Fatalf("the pass: pending %d, deleted %d, %v; want nothing to do", res.Pending, res.Deleted, err)
			}
			s.widgets = append(s.widgets, c.created...)
			live, err := r.anyOperandLive(ctx, p)
			if err != nil || live != c.live {
				t.Fatalf("anyOperandLive = %v, %v; want %v (widgets %d: team-a's are another installation's)", live, err, c.live, len(s.widgets))
			}
		})
	}
}

// Another installation of the same operator that OLM has not placed yet (created a moment ago: no
// olm.targetNamespaces, no OperatorGroup, phase "") blocks the plan: counted as global at once, it left
// the uninstall's operands in place for good (make e2e on kind, other runs installing widget-operator
// as an uninstall began). Once OLM has failed it (no OperatorGroup), it counts as global.
func TestAnInstallationOLMHasNotPlacedYetBlocksThePlan(t *testing.T) {
	ctx := context.Background()
	csv := widgetCSV("op", "x", "op,team-a")
	young := widgetCSV("other", "y", "")
	delete(young.Annotations, targetNamespacesAnno)
	s := &widgetsReader{csvs: []v1alpha1.ClusterServiceVersion{csv, young}}
	_, err := buildPlan(ctx, s, s, &csv, parseTargets("op,team-a", "test"))
	var blocked *errNoTargets
	if !errors.As(err, &blocked) || !strings.Contains(blocked.msg, "CSV other/widget.v1 also owns widgets.g") {
		t.Fatalf("a widget CSV OLM has not placed yet: want the plan blocked, naming it, got %v", err)
	}
	s.csvs[1].Status.Phase = v1alpha1.CSVPhaseFailed
	p, err := buildPlan(ctx, s, s, &csv, parseTargets("op,team-a", "test"))
	if err != nil {
		t.Fatalf("a widget CSV OLM failed: want a plan, got %v", err)
	}
	if p.allows(schema.GroupKind{Group: "g", Kind: "Widget"}, "team-a") == nil {
		t.Fatalf("a widget CSV OLM failed for want of an OperatorGroup counts as global: want team-a's widgets left in place (notes %q)", p.notes)
	}
}

// A CRD an OLM v1 ClusterExtension also installed (its controller reference, or the hold of its ordered
// uninstall) is another installation serving its CRs everywhere (invariant 3): an OLM v0 CSV owning
// the same CRD deletes none of them. A CRD an orphan uninstall left behind, or a reference to another
// group's ClusterExtension kind, claims nothing.
func TestACRDAClusterExtensionInstalledIsAnotherInstallation(t *testing.T) {
	ce := metav1.OwnerReference{APIVersion: "olm.operatorframework.io/v1", Kind: "ClusterExtension", Name: "widgets", UID: "ce", Controller: ptrTo(true)}
	withMeta := func(refs []metav1.OwnerReference, labels, annotations map[string]string) *apiextensionsv1.CustomResourceDefinition {
		c := widgetsCRD.DeepCopy()
		c.OwnerReferences, c.Labels, c.Annotations = refs, labels, annotations
		return c
	}
	for _, c := range []struct {
		name  string
		crd   *apiextensionsv1.CustomResourceDefinition
		claim string // in the notes; "" when the plan may delete the widgets
	}{
		{name: "installed by a ClusterExtension", crd: withMeta([]metav1.OwnerReference{ce}, nil, nil), claim: "also served by ClusterExtension widgets"},
		{name: "held by its ordered uninstall", crd: withMeta(nil, map[string]string{extensioncleanup.OwnerNameLabel: "widgets"}, map[string]string{extensioncleanup.HeldByAnnotation: "holder-uid"}),
			claim: "also served by ClusterExtension widgets (its ordered uninstall)"},
		{name: "left behind by an orphan uninstall", crd: withMeta(nil, map[string]string{extensioncleanup.OwnerNameLabel: "widgets"}, map[string]string{extensioncleanup.OrphanedFromAnnotation: "widgets/ce"})},
		{name: "another group's ClusterExtension", crd: withMeta([]metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "ClusterExtension", Name: "widgets", UID: "x"}}, nil, nil)},
	} {
		for _, targets := range []string{"", "team-a"} {
			t.Run(c.name+", targets "+cmp.Or(targets, "all"), func(t *testing.T) {
				ctx := context.Background()
				csv := widgetCSV("op", "x", targets)
				s := &widgetsReader{csvs: []v1alpha1.ClusterServiceVersion{csv}, widgets: []metav1.PartialObjectMetadata{widgetIn("team-a", "w1")}, crd: c.crd}
				p, err := buildPlan(ctx, s, s, &csv, parseTargets(targets, "test"))
				if err != nil {
					t.Fatal(err)
				}
				notes := strings.Join(p.notes, "; ")
				allowed := p.allows(schema.GroupKind{Group: "g", Kind: "Widget"}, "team-a")
				if c.claim == "" {
					if allowed != nil {
						t.Fatalf("the plan may not delete team-a's widgets: %v (notes %q); nothing else serves them", allowed, notes)
					}
					return
				}
				if allowed == nil || !strings.Contains(notes, c.claim) {
					t.Fatalf("team-a's widgets: allowed = %v, notes %q; want them left in place, the notes saying %q", allowed, notes, c.claim)
				}
				r := &Reconciler{opts: Options{}.withDefaults(), live: s, deleteSem: make(chan struct{}, 4), pageSize: 2}
				if res, err := r.runPass(ctx, &csv, p); err != nil || res.Deleted != 0 || res.Pending != 0 {
					t.Fatalf("the pass: deleted %d, pending %d, %v; want nothing deleted, nothing pending", res.Deleted, res.Pending, err)
				}
			})
		}
	}
}
