package olm

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// Installing through a catalog, as users do on clusters with nodes (kind, existing): a grpc
// CatalogSource serving an image built by scripts/images.sh, a Subscription, OLM's InstallPlan (with
// bundle unpack Jobs running the opm and bundle images), the CSV. Every wait fails with what the
// catalog, subscription, install plans and unpack jobs were doing.

// DefaultCatalogImage serves bundles/catalog (fixture operators) with `opm serve`; scripts/images.sh builds it.
const DefaultCatalogImage = "fixtures.local/catalog:v0.1.0"

// bundleUnpackRefLabel marks OLM's bundle unpack Jobs (pkg/controller/bundle).
const bundleUnpackRefLabel = "operatorframework.io/bundle-unpack-ref"

// CatalogSourceInput creates a grpc CatalogSource.
type CatalogSourceInput struct {
	Client    client.Client
	Namespace string
	// Name defaults to "cleanup-e2e-catalog".
	Name string
	// Image defaults to DefaultCatalogImage.
	Image   string
	Timeout time.Duration
}

// CreateCatalogSource creates the CatalogSource (OLM starts a pod running the image) and waits until
// OLM's connection to it is READY.
func CreateCatalogSource(ctx context.Context, in CatalogSourceInput) (*operatorsv1alpha1.CatalogSource, error) {
	cs := &operatorsv1alpha1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace, Name: in.Name},
		Spec: operatorsv1alpha1.CatalogSourceSpec{
			SourceType:  operatorsv1alpha1.SourceTypeGrpc,
			Image:       in.Image,
			DisplayName: "cleanup-e2e fixtures",
			Publisher:   "cleanup-e2e",
		},
	}
	if cs.Name == "" {
		cs.Name = "cleanup-e2e-catalog"
	}
	if cs.Spec.Image == "" {
		cs.Spec.Image = DefaultCatalogImage
	}
	if err := EnsureNamespaces(ctx, in.Client, in.Namespace); err != nil {
		return nil, err
	}
	if err := in.Client.Create(ctx, cs); err != nil {
		return nil, fmt.Errorf("create CatalogSource %s/%s: %w", cs.Namespace, cs.Name, err)
	}
	return cs, WaitCatalogSourceReady(ctx, in.Client, client.ObjectKeyFromObject(cs), intervals.Or(in.Timeout, intervals.CatalogReady))
}

// WaitCatalogSourceReady waits until status.connectionState.lastObservedState is READY. The error
// says what the connection state and the catalog's pod (phase, container states, probes) were.
func WaitCatalogSourceReady(ctx context.Context, c client.Client, key types.NamespacedName, timeout time.Duration) error {
	return intervals.Wait(ctx, intervals.CatalogReady, func() (bool, string) {
		cs := &operatorsv1alpha1.CatalogSource{}
		if err := c.Get(ctx, key, cs); err != nil {
			return false, fmt.Sprintf("CatalogSource %s: %v", key, err)
		}
		if st := cs.Status.GRPCConnectionState; st != nil && st.LastObservedState == "READY" {
			return true, ""
		}
		return false, describeCatalogSource(ctx, c, cs)
	}, intervals.Within(timeout))
}

func describeCatalogSource(ctx context.Context, c client.Client, cs *operatorsv1alpha1.CatalogSource) string {
	state := "no connection state yet"
	if st := cs.Status.GRPCConnectionState; st != nil {
		state = fmt.Sprintf("connection %s (address %q)", st.LastObservedState, st.Address)
	}
	if cs.Status.Message != "" {
		state += fmt.Sprintf(", message %q (reason %s)", cs.Status.Message, cs.Status.Reason)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(cs.Namespace), client.MatchingLabels{"olm.catalogSource": cs.Name}); err != nil {
		return fmt.Sprintf("CatalogSource %s/%s: %s; list its pods: %v", cs.Namespace, cs.Name, state, err)
	}
	var ps []string
	for i := range pods.Items {
		ps = append(ps, describePod(ctx, nil, &pods.Items[i]))
	}
	if len(ps) == 0 {
		ps = []string{"no catalog pod yet"}
	}
	return fmt.Sprintf("CatalogSource %s/%s (image %s): %s; %s", cs.Namespace, cs.Name, cs.Spec.Image, state, strings.Join(ps, "; "))
}

// SubscribeInput subscribes to a package of a catalog.
type SubscribeInput struct {
	Client client.Client
	// Namespace the operator is installed in; InstallMode and TargetNamespaces define its OperatorGroup.
	Namespace        string
	InstallMode      operatorsv1alpha1.InstallModeType
	TargetNamespaces []string
	// CatalogSource (and its namespace, default Namespace) serving Package.
	CatalogSource, CatalogSourceNamespace string
	Package, Channel                      string
	// StartingCSV pins the first version installed (default: the channel head).
	StartingCSV string
	// Approval of InstallPlans: Automatic (default) or Manual. With Manual, Subscribe approves the
	// InstallPlan of StartingCSV (and of nothing else: later versions wait for ApproveUpgrade).
	Approval operatorsv1alpha1.Approval
	// Cleanup, when set, is written to the installed CSV's spec.cleanup.enabled once it exists (bundles
	// ship it unset; users opt in on the live CSV).
	Cleanup *bool
	Timeout time.Duration
}

// Subscribe creates the OperatorGroup and the Subscription, approves the first InstallPlan when
// approval is Manual, and waits until the installed CSV is Succeeded. It returns the Subscription
// and the live CSV.
func Subscribe(ctx context.Context, in SubscribeInput) (*operatorsv1alpha1.Subscription, *operatorsv1alpha1.ClusterServiceVersion, error) {
	if in.Client == nil || in.Namespace == "" || in.Package == "" || in.CatalogSource == "" {
		return nil, nil, fmt.Errorf("SubscribeInput needs Client, Namespace, Package and CatalogSource")
	}
	timeout := intervals.Or(in.Timeout, intervals.Subscribed)
	targets, err := TargetNamespaces(in.InstallMode, in.Namespace, in.TargetNamespaces)
	if err != nil {
		return nil, nil, err
	}
	if err := EnsureNamespaces(ctx, in.Client, append([]string{in.Namespace}, targets...)...); err != nil {
		return nil, nil, err
	}
	if _, err := EnsureOperatorGroup(ctx, in.Client, in.Namespace, targets); err != nil {
		return nil, nil, err
	}
	approval := in.Approval
	if approval == "" {
		approval = operatorsv1alpha1.ApprovalAutomatic
	}
	srcNS := in.CatalogSourceNamespace
	if srcNS == "" {
		srcNS = in.Namespace
	}
	sub := &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace, Name: in.Package},
		Spec: &operatorsv1alpha1.SubscriptionSpec{
			CatalogSource: in.CatalogSource, CatalogSourceNamespace: srcNS,
			Package: in.Package, Channel: in.Channel, StartingCSV: in.StartingCSV, InstallPlanApproval: approval,
		},
	}
	if err := in.Client.Create(ctx, sub); err != nil {
		return nil, nil, fmt.Errorf("create Subscription %s/%s: %w", sub.Namespace, sub.Name, err)
	}
	csvName := in.StartingCSV
	if approval == operatorsv1alpha1.ApprovalManual {
		if csvName == "" {
			return nil, nil, fmt.Errorf("Subscription %s: Manual approval needs StartingCSV (the InstallPlan to approve)", sub.Name)
		}
		if _, err := ApproveInstallPlan(ctx, in.Client, sub, csvName, timeout); err != nil {
			return nil, nil, err
		}
	}
	if csvName == "" {
		if err := intervals.Wait(ctx, intervals.Subscribed, func() (bool, string) {
			if err := in.Client.Get(ctx, client.ObjectKeyFromObject(sub), sub); err != nil {
				return false, err.Error()
			}
			csvName = sub.Status.CurrentCSV
			return csvName != "", "Subscription has no currentCSV yet: " + DescribeSubscription(ctx, in.Client, sub)
		}, intervals.Within(timeout)); err != nil {
			return nil, nil, err
		}
	}
	csv, err := waitSubscribedCSV(ctx, in.Client, sub, csvName, in.Cleanup, timeout)
	if err != nil {
		return nil, nil, err
	}
	return sub, csv, in.Client.Get(ctx, client.ObjectKeyFromObject(sub), sub)
}

// waitSubscribedCSV waits for the CSV an InstallPlan of sub creates, sets spec.cleanup.enabled on it
// when asked, and waits until it is Succeeded.
func waitSubscribedCSV(ctx context.Context, c client.Client, sub *operatorsv1alpha1.Subscription, csvName string, cleanup *bool, timeout time.Duration) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	key := types.NamespacedName{Namespace: sub.Namespace, Name: csvName}
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	patched := cleanup == nil
	polls, crashing := 0, ""
	err := intervals.Wait(ctx, intervals.Subscribed, func() (bool, string) {
		if err := c.Get(ctx, key, csv); err != nil {
			live := &operatorsv1alpha1.Subscription{}
			if gerr := c.Get(ctx, client.ObjectKeyFromObject(sub), live); gerr == nil {
				if note, nerr := resolveAgainIfStale(ctx, c, live); note != "" || nerr != nil {
					return false, fmt.Sprintf("CSV %s: %v; %s%s", key, err, note, errOrEmpty(nerr))
				}
			}
			return false, fmt.Sprintf("CSV %s: %v; %s", key, err, DescribeSubscription(ctx, c, sub))
		}
		if !patched {
			if err := c.Patch(ctx, csv, client.RawPatch(types.MergePatchType,
				[]byte(fmt.Sprintf(`{"spec":{"cleanup":{"enabled":%t}}}`, *cleanup)))); err != nil {
				return false, fmt.Sprintf("set spec.cleanup.enabled on CSV %s: %v", key, err)
			}
			patched = true
		}
		if csv.Status.Phase == operatorsv1alpha1.CSVPhaseSucceeded {
			return true, ""
		}
		if polls++; polls%crashCheckEvery == 0 {
			if crashing = CrashLooping(ctx, c, nil, csv); crashing != "" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("CSV %s wants phase Succeeded: %s", key, DescribeCSV(csv))
	}, explainOperator(c, nil, csv), intervals.Within(timeout))
	if err != nil {
		return nil, err
	}
	if crashing != "" {
		return nil, crashLoopError(key, operatorsv1alpha1.CSVPhaseSucceeded, timeout, crashing)
	}
	// OLM created the owned CRDs; the caller creates custom resources of their kinds through c next.
	return csv, kube.WaitCRDsUsable(ctx, c, ownedCRDNames(csv)...)
}

func ownedCRDNames(csv *operatorsv1alpha1.ClusterServiceVersion) []string {
	var names []string
	for _, owned := range csv.Spec.CustomResourceDefinitions.Owned {
		names = append(names, owned.Name)
	}
	return names
}

// ApproveInstallPlan approves the InstallPlan of sub that installs csvName and waits until it is
// Complete. It follows the Subscription's current InstallPlan (status.installPlanRef): OLM may write
// several plans for one upgrade within a second (one per resolution it reruns), and only the one the
// Subscription points at is executed, so approving the first one found can wait forever.
func ApproveInstallPlan(ctx context.Context, c client.Client, sub *operatorsv1alpha1.Subscription, csvName string, timeout time.Duration) (*operatorsv1alpha1.InstallPlan, error) {
	var ip *operatorsv1alpha1.InstallPlan
	err := intervals.Wait(ctx, intervals.Subscribed, func() (bool, string) {
		live := &operatorsv1alpha1.Subscription{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(sub), live); err != nil {
			return false, fmt.Sprintf("Subscription %s/%s: %v", sub.Namespace, sub.Name, err)
		}
		ref := live.Status.InstallPlanRef
		if ref == nil || !installPlanOf(ctx, c, ref, csvName) {
			if note, err := resolveAgainIfStale(ctx, c, live); note != "" || err != nil {
				return false, fmt.Sprintf("%s%s", note, errOrEmpty(err))
			}
		}
		if ref == nil {
			return false, fmt.Sprintf("no InstallPlan for %s yet; %s", csvName, DescribeSubscription(ctx, c, sub))
		}
		ip = &operatorsv1alpha1.InstallPlan{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, ip); err != nil {
			return false, fmt.Sprintf("InstallPlan %s/%s of the Subscription: %v", ref.Namespace, ref.Name, err)
		}
		if !slices.Contains(ip.Spec.ClusterServiceVersionNames, csvName) {
			return false, fmt.Sprintf("the Subscription's InstallPlan %s installs %v, waiting for one installing %s; %s",
				ip.Name, ip.Spec.ClusterServiceVersionNames, csvName, DescribeSubscription(ctx, c, sub))
		}
		if !ip.Spec.Approved {
			ip.Spec.Approved = true
			if err := c.Update(ctx, ip); err != nil {
				return false, fmt.Sprintf("approve InstallPlan %s: %v", ip.Name, err)
			}
			return false, "approved InstallPlan " + ip.Name
		}
		if ip.Status.Phase == operatorsv1alpha1.InstallPlanPhaseComplete {
			return true, ""
		}
		return false, DescribeInstallPlan(ctx, c, ip)
	}, intervals.Within(timeout))
	if err != nil {
		return nil, fmt.Errorf("approve the InstallPlan of %s: %w", csvName, err)
	}
	return ip, nil
}

// WaitInstallPlanComplete waits until the InstallPlan is Complete; Failed ends the wait at once. The
// error has its phase, conditions, bundle lookups and the bundle unpack Jobs of its catalogs.
func WaitInstallPlanComplete(ctx context.Context, c client.Client, key types.NamespacedName, timeout time.Duration) error {
	pollCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	failed := ""
	err := intervals.Wait(pollCtx, intervals.Subscribed, func() (bool, string) {
		ip := &operatorsv1alpha1.InstallPlan{}
		if err := c.Get(ctx, key, ip); err != nil {
			return false, fmt.Sprintf("InstallPlan %s: %v", key, err)
		}
		switch ip.Status.Phase {
		case operatorsv1alpha1.InstallPlanPhaseComplete:
			return true, ""
		case operatorsv1alpha1.InstallPlanPhaseFailed:
			failed = DescribeInstallPlan(ctx, c, ip)
			cancel()
			return false, failed
		}
		return false, DescribeInstallPlan(ctx, c, ip)
	}, intervals.Within(timeout))
	if failed != "" {
		return fmt.Errorf("InstallPlan %s failed: %s", key, failed)
	}
	return err
}

// DescribeInstallPlan summarises an InstallPlan for failure messages: phase, approval, conditions,
// bundle lookups and the unpack Jobs (with their pods) of its bundles.
func DescribeInstallPlan(ctx context.Context, c client.Client, ip *operatorsv1alpha1.InstallPlan) string {
	parts := []string{fmt.Sprintf("InstallPlan %s/%s for %v: phase=%q approval=%s approved=%t",
		ip.Namespace, ip.Name, ip.Spec.ClusterServiceVersionNames, ip.Status.Phase, ip.Spec.Approval, ip.Spec.Approved)}
	if ip.Status.Message != "" {
		parts = append(parts, fmt.Sprintf("message %q", ip.Status.Message))
	}
	for _, cond := range ip.Status.Conditions {
		parts = append(parts, fmt.Sprintf("condition %s=%s %s %q", cond.Type, cond.Status, cond.Reason, cond.Message))
	}
	namespaces := map[string]bool{}
	for _, bl := range ip.Status.BundleLookups {
		for _, cond := range bl.Conditions {
			if cond.Status == corev1.ConditionTrue {
				parts = append(parts, fmt.Sprintf("bundle %s: %s %s %q", bl.Path, cond.Type, cond.Reason, cond.Message))
			}
		}
		if bl.CatalogSourceRef != nil {
			namespaces[bl.CatalogSourceRef.Namespace] = true
		}
	}
	for ns := range namespaces {
		parts = append(parts, describeUnpackJobs(ctx, c, ns))
	}
	return strings.Join(parts, "; ")
}

// describeUnpackJobs lists OLM's bundle unpack Jobs in namespace with their status and pods.
func describeUnpackJobs(ctx context.Context, c client.Client, namespace string) string {
	jobs := &batchv1.JobList{}
	if err := c.List(ctx, jobs, client.InNamespace(namespace), client.HasLabels{bundleUnpackRefLabel}); err != nil {
		return fmt.Sprintf("list unpack jobs in %s: %v", namespace, err)
	}
	if len(jobs.Items) == 0 {
		return "no bundle unpack job in " + namespace
	}
	var out []string
	for _, j := range jobs.Items {
		s := fmt.Sprintf("unpack job %s/%s: active %d succeeded %d failed %d", j.Namespace, j.Name, j.Status.Active, j.Status.Succeeded, j.Status.Failed)
		for _, cond := range j.Status.Conditions {
			if cond.Status == corev1.ConditionTrue {
				s += fmt.Sprintf(", %s %s %q", cond.Type, cond.Reason, cond.Message)
			}
		}
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{"job-name": j.Name}); err == nil {
			for i := range pods.Items {
				s += "; " + describePod(ctx, nil, &pods.Items[i])
			}
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// DescribeSubscription summarises a Subscription, its InstallPlan and catalog for failure messages.
func DescribeSubscription(ctx context.Context, c client.Client, sub *operatorsv1alpha1.Subscription) string {
	live := &operatorsv1alpha1.Subscription{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(sub), live); err != nil {
		return fmt.Sprintf("Subscription %s/%s: %v", sub.Namespace, sub.Name, err)
	}
	parts := []string{fmt.Sprintf("Subscription %s/%s: state=%q currentCSV=%q installedCSV=%q",
		live.Namespace, live.Name, live.Status.State, live.Status.CurrentCSV, live.Status.InstalledCSV)}
	for _, cond := range live.Status.Conditions {
		if cond.Status == corev1.ConditionTrue {
			parts = append(parts, fmt.Sprintf("condition %s %s %q", cond.Type, cond.Reason, cond.Message))
		}
	}
	if ref := live.Status.InstallPlanRef; ref != nil {
		ip := &operatorsv1alpha1.InstallPlan{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, ip); err == nil {
			parts = append(parts, DescribeInstallPlan(ctx, c, ip))
		}
	}
	if live.Spec != nil {
		cs := &operatorsv1alpha1.CatalogSource{}
		key := types.NamespacedName{Namespace: live.Spec.CatalogSourceNamespace, Name: live.Spec.CatalogSource}
		if err := c.Get(ctx, key, cs); err != nil {
			parts = append(parts, fmt.Sprintf("CatalogSource %s: %v", key, err))
		} else if st := cs.Status.GRPCConnectionState; st == nil || st.LastObservedState != "READY" {
			parts = append(parts, describeCatalogSource(ctx, c, cs))
		}
	}
	return strings.Join(parts, "; ")
}

// UpgradeSubscriptionInput moves a subscribed operator to the next CSV of its channel.
type UpgradeSubscriptionInput struct {
	Client       client.Client
	Subscription *operatorsv1alpha1.Subscription
	// From is the installed CSV; To the CSV that replaces it (the next channel entry).
	From *operatorsv1alpha1.ClusterServiceVersion
	To   string
	// Cleanup, when set, is written to the new CSV's spec.cleanup.enabled (nil: leave what OLM and the
	// operand-cleanup controller make of it).
	Cleanup *bool
	Timeout time.Duration
}

// UpgradeSubscription approves the InstallPlan that installs To when the Subscription's approval is
// Manual (with Automatic, OLM proceeds by itself), waits until To is Succeeded and From is gone, and
// returns the new live CSV.
func UpgradeSubscription(ctx context.Context, in UpgradeSubscriptionInput) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	timeout := intervals.Or(in.Timeout, intervals.Subscribed)
	sub := in.Subscription
	if sub.Spec.InstallPlanApproval == operatorsv1alpha1.ApprovalManual {
		if _, err := ApproveInstallPlan(ctx, in.Client, sub, in.To, timeout); err != nil {
			return nil, fmt.Errorf("upgrade %s → %s: %w", in.From.Name, in.To, err)
		}
	}
	csv, err := waitSubscribedCSV(ctx, in.Client, sub, in.To, in.Cleanup, timeout)
	if err != nil {
		return nil, fmt.Errorf("upgrade %s → %s: %w", in.From.Name, in.To, err)
	}
	if err := WaitForCSVGone(ctx, in.Client, client.ObjectKeyFromObject(in.From), timeout); err != nil {
		return nil, fmt.Errorf("upgrade %s → %s: the replaced CSV was not removed: %w", in.From.Name, in.To, err)
	}
	return csv, nil
}

// Unsubscribe deletes the Subscription (so that OLM does not reinstall), then uninstalls the CSV as
// Uninstall does.
func Unsubscribe(ctx context.Context, sub *operatorsv1alpha1.Subscription, in UninstallInput) error {
	if err := client.IgnoreNotFound(in.Client.Delete(ctx, sub)); err != nil {
		return fmt.Errorf("delete Subscription %s/%s: %w", sub.Namespace, sub.Name, err)
	}
	return Uninstall(ctx, in)
}
