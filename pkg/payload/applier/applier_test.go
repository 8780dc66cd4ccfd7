package applier_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/clusteroperator"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

const (
	widgetGroup      = "test.cleanup-e2e.io"
	widgetAPI        = widgetGroup + "/v1"
	holdFinalizer    = widgetGroup + "/hold"
	crdFile          = "0000_00_widgets_00_crd.yaml"
	nsFile           = "0000_05_app_00_namespace.yaml"
	widgetsCRDPlural = "widgets"
)

func widget(ns, name string, finalizers ...string) *unstructured.Unstructured {
	w := pt.Object(widgetAPI, "Widget", ns, name)
	w.Object["spec"] = map[string]interface{}{"size": int64(1)}
	return pt.WithFinalizers(w, finalizers...)
}

func releaseFinalizers(ctx context.Context, ns, name string) {
	GinkgoHelper()
	Eventually(func() error {
		w, err := getObj(ctx, widgetAPI, "Widget", ns, name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		w.SetFinalizers(nil)
		return k8s.Update(ctx, w)
	}).Should(Succeed())
	Eventually(func() bool {
		_, err := getObj(ctx, widgetAPI, "Widget", ns, name)
		return apierrors.IsNotFound(err)
	}).Should(BeTrue())
}

func notFound(ctx context.Context, apiVersion, kind, ns, name string) func() bool {
	return func() bool {
		_, err := getObj(ctx, apiVersion, kind, ns, name)
		return apierrors.IsNotFound(err)
	}
}

var _ = Describe("payload applier", func() {
	var (
		ctx      context.Context
		sysNS    string // the applier's namespace (state ConfigMap)
		appNS    string // created by the payloads
		coName   string // the applier's own ClusterOperator
		base     *pt.Builder
		newOwned func() *applier.Applier
	)

	BeforeEach(func() {
		ctx = context.Background()
		sysNS, appNS, coName = unique("applier"), unique("app"), unique("payload-applier")
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sysNS}})).To(Succeed())
		base = pt.New("1.0.0").
			File(crdFile, pt.CRD(widgetGroup, "Widget", widgetsCRDPlural, true)).
			File(nsFile, pt.Namespace(appNS))
		newOwned = func() *applier.Applier {
			return newApplier(applier.Options{Namespace: sysNS, ClusterOperatorName: coName})
		}
	})

	run := func(a *applier.Applier, b *pt.Builder, mode applier.Mode) applier.Result {
		GinkgoHelper()
		return runPass(ctx, a, b, mode)
	}
	cm := func(name string) payload.Resource {
		return payload.Resource{Version: "v1", Kind: "ConfigMap", Namespace: appNS, Name: name}
	}
	wres := func(name string) payload.Resource {
		return payload.Resource{Group: widgetGroup, Version: "v1", Kind: "Widget", Namespace: appNS, Name: name}
	}

	It("installs a payload, skips delete-annotated manifests and reports its ClusterOperator", func() {
		a := newOwned()
		b := base.Clone().
			File("0000_10_app_00_keep.yaml", pt.ConfigMap(appNS, "keep", map[string]string{"k": "v"})).
			File("0000_10_app_01_old.yaml", pt.Delete(pt.ConfigMap(appNS, "old", nil))).
			File("0000_10_app_02_gone-ns.yaml", pt.Delete(pt.Namespace(appNS+"-gone"))).
			File("0000_20_widgets_00_w.yaml", widget(appNS, "w1")) // kind from a CRD of this payload
		res := run(a, b, applier.ModeInstall)
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Completed).To(BeTrue())
		Expect(res.UpdateKind).To(Equal(payload.UpdateInitial))

		Expect(getObj(ctx, "v1", "ConfigMap", appNS, "keep")).Error().NotTo(HaveOccurred())
		Expect(getObj(ctx, widgetAPI, "Widget", appNS, "w1")).Error().NotTo(HaveOccurred())
		Expect(notFound(ctx, "v1", "ConfigMap", appNS, "old")()).To(BeTrue(), "never created at install")

		old := res.Task("0000_10_app_01_old.yaml")
		Expect(old.Outcome).To(Equal(applier.OutcomeDeleted))
		Expect(old.Resource).To(Equal(`configmap "` + appNS + `/old"`))
		Expect(res.Warnings()).To(ConsistOf(
			payload.MsgNotFound(cm("old")),
			`namespace "`+appNS+`-gone" not found. It either has already been removed or it has never been installed on this cluster.`,
		))
		Expect(res.Task("0000_10_app_00_keep.yaml").Outcome).To(Equal(applier.OutcomeApplied))
		Expect(res.Upgradeable).To(BeTrue())

		co, err := getCO(ctx, coName)()
		Expect(err).NotTo(HaveOccurred())
		Expect(co).To(clusteroperator.HaveOperandVersion("operator", "1.0.0"))
		Expect(co).To(clusteroperator.HaveCondition("Available", "True", "AsExpected"))
		Expect(co).To(clusteroperator.HaveConditionMessage("Available", "Payload applier has deployed 1.0.0"))
		Expect(co).To(clusteroperator.HaveCondition("Progressing", "False", "AsExpected"))
		Expect(co).To(clusteroperator.HaveCondition("Degraded", "False", "AsExpected"))
		Expect(co).To(clusteroperator.HaveCondition("Upgradeable", "True", "AsExpected"))
		Expect(co).To(clusteroperator.HaveRelatedObject("", "namespaces", "", sysNS))
		Expect(co).To(clusteroperator.HaveRelatedObject("", "configmaps", appNS, "keep"))
		Expect(co).To(clusteroperator.HaveRelatedObject(widgetGroup, "widgets", appNS, "w1"))
		Expect(co).NotTo(clusteroperator.HaveRelatedObject("", "configmaps", appNS, "old"))
	})

	It("deletes on update (any kind, namespaced and cluster-scoped) and reports progress until completed", func() {
		a := newOwned()
		crName := unique("role")
		v1 := base.Clone().
			File("0000_10_app_00_old.yaml", pt.ConfigMap(appNS, "old", nil)).
			File("0000_10_app_01_role.yaml", pt.Object("rbac.authorization.k8s.io/v1", "ClusterRole", "", crName))
		Expect(run(a, v1, applier.ModeInstall).Err).NotTo(HaveOccurred())

		v2 := v1.Clone().Version("1.1.0").
			File("0000_10_app_00_old.yaml", pt.Delete(pt.ConfigMap(appNS, "old", nil))).
			File("0000_10_app_01_role.yaml", pt.Delete(pt.Object("rbac.authorization.k8s.io/v1", "ClusterRole", "", crName)))
		res := run(a, v2, applier.ModeUpdate)
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.UpdateKind).To(Equal(payload.UpdateMinor))
		role := payload.Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: crName}
		Expect(res.Texts()).To(ContainElements(payload.MsgDeleteRequested(cm("old")), payload.MsgDeleteRequested(role)))
		Expect(payload.MsgDeleteRequested(role)).To(Equal(`Delete requested for clusterrole "` + crName + `".`))
		Expect(res.Task("0000_10_app_00_old.yaml").Outcome).To(Equal(applier.OutcomeDeleteRequested))
		Expect(res.DeletesInProgress).To(Equal([]string{role.String(), cm("old").String()}))
		Expect(res.Upgradeable).To(BeFalse())
		wantMsg := "Cluster minor or major version upgrades are not allowed while resource deletions are in progress; resources=" +
			`clusterrole "` + crName + `",configmap "` + appNS + `/old"`
		Expect(res.UpgradeableMessage).To(Equal(wantMsg))
		Eventually(getCO(ctx, coName)).Should(And(
			clusteroperator.HaveCondition("Upgradeable", "False", "ResourceDeletionInProgress"),
			clusteroperator.HaveConditionMessage("Upgradeable", wantMsg),
			clusteroperator.HaveOperandVersion("operator", "1.1.0"),
		))
		Eventually(notFound(ctx, "v1", "ConfigMap", appNS, "old")).Should(BeTrue())

		res = run(a, v2, applier.ModeReconcile)
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Texts()).To(ContainElements(payload.MsgDeleteCompleted(cm("old")), payload.MsgDeleteCompleted(role)))
		Expect(res.Task("0000_10_app_00_old.yaml").Outcome).To(Equal(applier.OutcomeDeleted))
		Expect(res.DeletesInProgress).To(BeEmpty())
		Eventually(getCO(ctx, coName)).Should(clusteroperator.HaveCondition("Upgradeable", "True", "AsExpected"))

		res = run(a, v2, applier.ModeReconcile)
		Expect(res.Texts()).NotTo(ContainElement(ContainSubstring(`configmap "` + appNS + `/old"`)))
	})

	DescribeTable("fails a manifest whose delete annotation is not exactly \"true\"",
		func(value string) {
			a := newOwned()
			Expect(run(a, base, applier.ModeInstall).Err).NotTo(HaveOccurred())
			victim := pt.ConfigMap(appNS, "victim", map[string]string{"state": "orig"})
			Expect(k8s.Create(ctx, victim.DeepCopy())).To(Succeed())

			b := base.Clone().Version("1.0.1").
				File("0000_10_a_00_victim.yaml", pt.DeleteValue(pt.ConfigMap(appNS, "victim", map[string]string{"state": "new"}), value)).
				File("0000_10_a_01_after.yaml", pt.ConfigMap(appNS, "a-after", nil)).
				File("0000_10_b_00_other.yaml", pt.ConfigMap(appNS, "b-other", nil)).
				File("0000_20_c_00_later.yaml", pt.ConfigMap(appNS, "c-later", nil))
			want := `invalid delete annotation "release.openshift.io/delete" value: "` + value + `"`
			for pass := 1; pass <= 2; pass++ { // failed tasks are retried (and fail again) on the next pass
				res := run(a, b, applier.ModeUpdate)
				var perr *applier.PassError
				Expect(errors.As(res.Err, &perr)).To(BeTrue(), "pass %d: %v", pass, res.Err)
				Expect(res.Completed).To(BeFalse())
				t := res.Task("0000_10_a_00_victim.yaml")
				Expect(t.Outcome).To(Equal(applier.OutcomeFailed))
				Expect(t.Err).To(MatchError(want))
				Expect(res.Task("0000_10_a_01_after.yaml").Outcome).To(Equal(applier.OutcomeSkipped), "same serial chain")
				Expect(res.Task("0000_10_b_00_other.yaml").Outcome).To(Equal(applier.OutcomeApplied), "independent component")
				Expect(res.Task("0000_20_c_00_later.yaml").Outcome).To(Equal(applier.OutcomeSkipped), "later run level")
				Expect(res.Err.Error()).To(ContainSubstring("0000_10_a_00_victim.yaml[0]: " + want))
				Expect(res.Task("0000_10_a_01_after.yaml").Err).To(MatchError(ContainSubstring("0000_10_a_00_victim.yaml[0] failed")))
				Expect(res.Task("0000_20_c_00_later.yaml").Err).To(MatchError(ContainSubstring("run level 10 did not complete")))
			}
			live, err := getObj(ctx, "v1", "ConfigMap", appNS, "victim")
			Expect(err).NotTo(HaveOccurred(), "not deleted")
			Expect(live.GetDeletionTimestamp()).To(BeNil())
			Expect(live.Object["data"]).To(Equal(map[string]interface{}{"state": "orig"}), "not applied")
			Expect(notFound(ctx, "v1", "ConfigMap", appNS, "a-after")()).To(BeTrue())
			Expect(notFound(ctx, "v1", "ConfigMap", appNS, "c-later")()).To(BeTrue())
			Expect(getObj(ctx, "v1", "ConfigMap", appNS, "b-other")).Error().NotTo(HaveOccurred())

			co, err := getCO(ctx, coName)()
			Expect(err).NotTo(HaveOccurred())
			Expect(co).To(clusteroperator.HaveCondition("Degraded", "True", applier.ReasonInvalidDeleteAnnotation))
			Expect(co).To(clusteroperator.HaveConditionMessage("Degraded", ContainSubstring(want)))
			Expect(co).To(clusteroperator.HaveCondition("Progressing", "True", applier.ReasonInvalidDeleteAnnotation))
			Expect(co).To(clusteroperator.HaveOperandVersion("operator", "1.0.0"), "the failed version is not reported")

			// Fixing the annotation lets the next pass delete it and run the dependents.
			b.File("0000_10_a_00_victim.yaml", pt.Delete(pt.ConfigMap(appNS, "victim", nil)))
			res := run(a, b, applier.ModeUpdate)
			Expect(res.Err).NotTo(HaveOccurred())
			Expect(res.Texts()).To(ContainElement(payload.MsgDeleteRequested(cm("victim"))))
			Expect(getObj(ctx, "v1", "ConfigMap", appNS, "a-after")).Error().NotTo(HaveOccurred())
			Expect(getObj(ctx, "v1", "ConfigMap", appNS, "c-later")).Error().NotTo(HaveOccurred())
			Eventually(getCO(ctx, coName)).Should(And(
				clusteroperator.HaveCondition("Degraded", "False", "AsExpected"),
				clusteroperator.HaveOperandVersion("operator", "1.0.1")))
		},
		Entry(`"True"`, "True"),
		Entry(`"yes"`, "yes"),
		Entry(`""`, ""),
		Entry(`"false"`, "false"),
	)

	It("warns once when the object to delete is already gone", func() {
		a := newOwned()
		Expect(run(a, base, applier.ModeInstall).Err).NotTo(HaveOccurred())
		b := base.Clone().Version("1.0.1").File("0000_10_app_00_never.yaml", pt.Delete(pt.ConfigMap(appNS, "never", nil)))
		res := run(a, b, applier.ModeUpdate)
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Warnings()).To(Equal([]string{payload.MsgNotFound(cm("never"))}))
		Expect(res.Task("0000_10_app_00_never.yaml").Outcome).To(Equal(applier.OutcomeDeleted))
		Expect(res.Upgradeable).To(BeTrue())
		res = run(a, b, applier.ModeReconcile)
		Expect(res.Warnings()).To(BeEmpty())
	})

	It("warns when a deleted object reappears", func() {
		a := newOwned()
		v1 := base.Clone().File("0000_10_app_00_x.yaml", pt.ConfigMap(appNS, "x", nil))
		Expect(run(a, v1, applier.ModeInstall).Err).NotTo(HaveOccurred())
		v2 := v1.Clone().Version("1.0.1").File("0000_10_app_00_x.yaml", pt.Delete(pt.ConfigMap(appNS, "x", nil)))
		Expect(run(a, v2, applier.ModeUpdate).Texts()).To(ContainElement(payload.MsgDeleteRequested(cm("x"))))
		Eventually(notFound(ctx, "v1", "ConfigMap", appNS, "x")).Should(BeTrue())
		Expect(run(a, v2, applier.ModeReconcile).Texts()).To(ContainElement(payload.MsgDeleteCompleted(cm("x"))))

		Expect(k8s.Create(ctx, pt.ConfigMap(appNS, "x", nil))).To(Succeed()) // someone recreates it
		res := run(a, v2, applier.ModeReconcile)
		st, err := a.State(ctx)
		Expect(err).NotTo(HaveOccurred())
		var verified time.Time
		for _, d := range st.Deletes {
			if d.Resource.Key() == cm("x").Key() {
				verified = *d.Verified
			}
		}
		Expect(verified.IsZero()).To(BeFalse())
		Expect(res.Warnings()).To(Equal([]string{payload.MsgReappeared(cm("x"), verified)}))
		Expect(res.Warnings()[0]).To(HavePrefix(`configmap "` + appNS + `/x" has reappeared after having been deleted at `))
		Expect(res.Task("0000_10_app_00_x.yaml").Outcome).To(Equal(applier.OutcomeReappeared))
		Expect(res.Upgradeable).To(BeTrue())
	})

	It("tracks a finalizer-held delete: requested, expected by, completed; Upgradeable False then True", func() {
		a := newOwned()
		v1 := base.Clone().File("0000_10_app_00_w.yaml", widget(appNS, "w1", holdFinalizer))
		Expect(run(a, v1, applier.ModeInstall).Err).NotTo(HaveOccurred())

		v2 := v1.Clone().Version("2.0.0").File("0000_10_app_00_w.yaml", pt.Delete(widget(appNS, "w1")))
		res := run(a, v2, applier.ModeUpdate)
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.UpdateKind).To(Equal(payload.UpdateMajor))
		Expect(res.Texts()).To(ContainElement(`Delete requested for Widget "` + appNS + `/w1".`))
		Expect(res.DeletesInProgress).To(Equal([]string{wres("w1").String()}))
		Eventually(getCO(ctx, coName)).Should(clusteroperator.HaveCondition("Upgradeable", "False", payload.ReasonResourceDeletionInProgress))

		ok, msg, err := a.CanUpgradeTo(ctx, "2.1.0")
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse())
		Expect(msg).To(Equal(payload.UpgradeableMessage([]string{wres("w1").String()})))
		Expect(a.CanUpgradeTo(ctx, "2.0.1")).To(BeTrue(), "z-stream updates are not gated")

		// A minor/major update is refused while the delete is unverified (unless forced).
		v3 := v2.Clone().Version("3.0.0")
		res = run(a, v3, applier.ModeUpdate)
		Expect(applier.IsUpgradeBlocked(res.Err)).To(BeTrue(), "%v", res.Err)
		Expect(res.Err.Error()).To(ContainSubstring(payload.UpgradeableMessage([]string{wres("w1").String()})))
		Expect(a.CurrentVersion(ctx)).To(Equal("2.0.0"))

		w, err := getObj(ctx, widgetAPI, "Widget", appNS, "w1")
		Expect(err).NotTo(HaveOccurred())
		Expect(w.GetDeletionTimestamp()).NotTo(BeNil())
		res = run(a, v2, applier.ModeReconcile)
		Expect(res.Texts()).To(ContainElement(payload.MsgDeleteExpectedBy(wres("w1"), w.GetDeletionTimestamp().Time)))
		Expect(res.Texts()).To(ContainElement(MatchRegexp(`^Delete of Widget "` + appNS + `/w1" is expected by \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\.$`)))
		Expect(res.Task("0000_10_app_00_w.yaml").Outcome).To(Equal(applier.OutcomeDeleteInProgress))
		Expect(res.Upgradeable).To(BeFalse())

		releaseFinalizers(ctx, appNS, "w1")
		res = run(a, v2, applier.ModeReconcile)
		Expect(res.Texts()).To(ContainElement(`Delete of Widget "` + appNS + `/w1" completed.`))
		Expect(res.Upgradeable).To(BeTrue())
		Eventually(getCO(ctx, coName)).Should(clusteroperator.HaveCondition("Upgradeable", "True", "AsExpected"))
		Expect(a.CanUpgradeTo(ctx, "3.0.0")).To(BeTrue())
		Expect(run(a, v3, applier.ModeUpdate).Err).NotTo(HaveOccurred())
	})

	It("deletes in run-level order without holding later run levels on a pending delete", func() {
		a := newOwned()
		v1 := base.Clone().
			File("0000_10_first_00_w.yaml", widget(appNS, "w10", holdFinalizer)).
			File("0000_20_second_00_cm.yaml", pt.ConfigMap(appNS, "c20", nil))
		Expect(run(a, v1, applier.ModeInstall).Err).NotTo(HaveOccurred())
		v2 := v1.Clone().Version("1.0.1").
			File("0000_10_first_00_w.yaml", pt.Delete(widget(appNS, "w10"))).
			File("0000_20_second_00_cm.yaml", pt.Delete(pt.ConfigMap(appNS, "c20", nil))).
			File("0000_30_third_00_cm.yaml", pt.ConfigMap(appNS, "c30", nil))
		res := run(a, v2, applier.ModeUpdate)
		Expect(res.Err).NotTo(HaveOccurred())
		texts := res.Texts()
		first, second := -1, -1
		for i, t := range texts {
			switch t {
			case payload.MsgDeleteRequested(wres("w10")):
				first = i
			case payload.MsgDeleteRequested(cm("c20")):
				second = i
			}
		}
		Expect(first).To(BeNumerically(">=", 0))
		Expect(second).To(BeNumerically(">", first), "run level 10 deletes before run level 20: %v", texts)
		Expect(res.Task("0000_30_third_00_cm.yaml").Outcome).To(Equal(applier.OutcomeApplied))
		Expect(getObj(ctx, "v1", "ConfigMap", appNS, "c30")).Error().NotTo(HaveOccurred())
		w, err := getObj(ctx, widgetAPI, "Widget", appNS, "w10")
		Expect(err).NotTo(HaveOccurred(), "still held by its finalizer")
		Expect(w.GetDeletionTimestamp()).NotTo(BeNil())
		releaseFinalizers(ctx, appNS, "w10")
	})

	It("keeps delete progress across applier restarts", func() {
		a1 := newOwned()
		v1 := base.Clone().File("0000_10_app_00_w.yaml", widget(appNS, "w1", holdFinalizer))
		Expect(run(a1, v1, applier.ModeInstall).Err).NotTo(HaveOccurred())
		v2 := v1.Clone().Version("1.1.0").File("0000_10_app_00_w.yaml", pt.Delete(widget(appNS, "w1")))
		Expect(run(a1, v2, applier.ModeUpdate).Texts()).To(ContainElement(payload.MsgDeleteRequested(wres("w1"))))

		var state corev1.ConfigMap
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: sysNS, Name: coName + "-state"}, &state)).To(Succeed())
		Expect(state.Data).To(HaveKeyWithValue(applier.StateKey, ContainSubstring(`"name":"w1"`)))

		a2 := newOwned() // a restarted applier: new client, new mapper, state from the ConfigMap
		Expect(a2.DeletesInProgress(ctx)).To(Equal([]string{wres("w1").String()}))
		Expect(a2.CurrentVersion(ctx)).To(Equal("1.1.0"))
		res := run(a2, v2, applier.ModeReconcile)
		Expect(res.Texts()).To(ContainElement(HavePrefix(`Delete of Widget "` + appNS + `/w1" is expected by `)))
		Expect(res.Texts()).NotTo(ContainElement(payload.MsgDeleteRequested(wres("w1"))))
		Expect(res.Warnings()).To(BeEmpty())
		Expect(res.Upgradeable).To(BeFalse())
		Eventually(getCO(ctx, coName)).Should(clusteroperator.HaveCondition("Upgradeable", "False", payload.ReasonResourceDeletionInProgress))

		releaseFinalizers(ctx, appNS, "w1")
		a3 := newOwned()
		res = run(a3, v2, applier.ModeReconcile)
		Expect(res.Texts()).To(ContainElement(payload.MsgDeleteCompleted(wres("w1"))))
		Expect(res.Warnings()).To(BeEmpty(), "not mistaken for a never-seen object")
		Eventually(getCO(ctx, coName)).Should(clusteroperator.HaveCondition("Upgradeable", "True", "AsExpected"))
	})

	It("clears a delete whose manifest left the payload", func() {
		a := newOwned()
		v1 := base.Clone().File("0000_10_app_00_w.yaml", widget(appNS, "w1", holdFinalizer))
		Expect(run(a, v1, applier.ModeInstall).Err).NotTo(HaveOccurred())
		v2 := v1.Clone().Version("1.0.1").File("0000_10_app_00_w.yaml", pt.Delete(widget(appNS, "w1")))
		Expect(run(a, v2, applier.ModeUpdate).Err).NotTo(HaveOccurred())
		releaseFinalizers(ctx, appNS, "w1")
		v3 := v2.Clone().Version("1.0.2").Remove("0000_10_app_00_w.yaml")
		res := run(a, v3, applier.ModeUpdate)
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Texts()).To(ContainElement(payload.MsgDeleteCompleted(wres("w1"))))
		Expect(res.Upgradeable).To(BeTrue())
	})

	It("fails a manifest without a name, naming the file", func() {
		a := newOwned()
		b := base.Clone().File("0000_10_app_00_noname.yaml", pt.ConfigMap(appNS, "", nil))
		res := run(a, b, applier.ModeInstall)
		t := res.Task("0000_10_app_00_noname.yaml")
		Expect(t.Outcome).To(Equal(applier.OutcomeFailed))
		Expect(t.Err).To(MatchError(ContainSubstring("0000_10_app_00_noname.yaml")))
		Expect(t.Err).To(MatchError(ContainSubstring("name cannot be empty")))
		b = base.Clone().File("0000_10_app_00_noname.yaml", pt.Delete(pt.ConfigMap(appNS, "", nil)))
		Expect(run(a, b, applier.ModeUpdate).Task("0000_10_app_00_noname.yaml").Err).To(MatchError(ContainSubstring("0000_10_app_00_noname.yaml")))
	})
})
