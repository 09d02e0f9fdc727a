//go:build integration

package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	awsprovider "github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/fake"
	"github.com/joiner-autoscaler/joiner/pkg/controller"
)

// awsCluster is the cluster the AWS tests run as: the seeds' production
// cluster, its EC2NodeClass unchanged.
const awsCluster = "production"

// awsClient is the controller's scheme with karpenter.k8s.aws/v1, and a
// client of the test's API server that knows it.
func awsClient(t *testing.T) (*runtime.Scheme, client.Client) {
	t.Helper()
	scheme := controllerScheme(t)
	if err := awsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kc, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return scheme, kc
}

// startAWSController runs a controller with --cloud-provider aws's
// provider against the fake AWS endpoint and the test's API server.
func startAWSController(t *testing.T, f *fake.AWS) (*controller.Controller, client.Client, func()) {
	t.Helper()
	scheme, kc := awsClient(t)
	c, stop := runController(t, scheme, func(ctx context.Context, mgr manager.Manager) (controller.CloudProvider, error) {
		return awsprovider.New(ctx, awsprovider.Options{
			Config: f.Config(), Client: mgr.GetClient(), Clock: clock.RealClock{},
			ClusterName: awsCluster, ClusterEndpoint: "https://" + awsCluster + ".eks.example", ClusterCABundle: base64.StdEncoding.EncodeToString(cfg.CAData), ClusterCIDR: "10.0.0.0/16",
			KubernetesVersion: "1.37", InterruptionQueue: awsCluster, ReservedCapacity: true,
		})
	})
	return c, kc, stop
}

// applySeedNodeClass creates the production cluster's EC2NodeClass from
// examples/, as a user applies it.
func applySeedNodeClass(t *testing.T, kc client.Client) *awsv1.EC2NodeClass {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "clusters", "production", "karpenter", "ec2nodeclass.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	nc := &awsv1.EC2NodeClass{}
	if err := yaml.UnmarshalStrict(b, nc); err != nil {
		t.Fatal(err)
	}
	if err := kc.Create(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

// TestAWSProvider runs Joiner with the AWS provider — the real AWS SDK
// against an in-process fake of EC2, IAM, SSM, SQS and Pricing — on the
// test's API server, through the path: the seeds' EC2NodeClass
// resolves; a pending pod leads to one CreateFleet whose overrides are
// the plan's instance types in the selected subnets; the test, as the
// kubelet, registers the Node; an insufficient-capacity error on the
// cheapest offering falls back to the next; a spot interruption message
// drains and replaces the node and leaves the queue; deleting a NodeClaim
// terminates its instance; an orphan instance is collected; and the IAM
// policy in docs/aws covers exactly the calls made.
func TestAWSProvider(t *testing.T) {
	ctx := context.Background()
	f := fake.Standard(fake.StandardOptions{Region: "us-east-1", Cluster: awsCluster, KubernetesVersion: "1.37"})
	defer f.Close()
	c, kc, stop := startAWSController(t, f)
	defer stop()
	defer cleanUpAWS(t, kc, "aws-od", "aws-spot", "aws-reserved")

	// The seeds' EC2NodeClass resolves into its status.
	class := applySeedNodeClass(t, kc)
	defer func() { _ = kc.Delete(ctx, class) }()
	eventually(t, "the EC2NodeClass Ready", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKeyFromObject(class), class); err != nil {
			return false, err
		}
		for _, cond := range class.Status.Conditions {
			if cond.Type == controller.ConditionReady {
				return cond.Status == metav1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	checkResolved(t, f, class)

	// A class whose selector finds nothing says which and how to fix it.
	broken := class.DeepCopy()
	broken.ObjectMeta = metav1.ObjectMeta{Name: "untagged"}
	broken.Status = awsv1.EC2NodeClassStatus{}
	broken.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "nowhere"}}}
	if err := kc.Create(ctx, broken); err != nil {
		t.Fatal(err)
	}
	defer deleteClass(t, kc, broken)
	eventually(t, "the untagged EC2NodeClass Ready False, saying why", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKeyFromObject(broken), broken); err != nil {
			return false, err
		}
		for _, cond := range broken.Status.Conditions {
			if cond.Type == controller.ConditionReady && cond.Status == metav1.ConditionFalse {
				if !strings.Contains(cond.Message, "subnetSelectorTerms[0]") || !strings.Contains(cond.Message, "karpenter.sh/discovery=nowhere") {
					t.Errorf("Ready False says %q: want the selector term and its tags", cond.Message)
				}
				return true, nil
			}
		}
		return false, nil
	})

	tolerate := func(key string) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists}
	}
	types := []string{"m5.xlarge", "m6a.xlarge", "m6i.xlarge", "m7i.xlarge"}
	createPool(t, kc, "aws-od", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements[1].Values = types
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "aws-od", Effect: corev1.TaintEffectNoSchedule}}
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
	})

	// One pending pod, one CreateFleet: every allowed type in every
	// selected subnet, on demand at the lowest price.
	web := createPendingPod(t, kc, "aws-web", "3", tolerate("aws-od"))
	claim := claimOfPool(t, kc, "aws-od")
	claim = *waitLaunched(t, kc, claim.Name)
	fleets := f.Fleets()
	if len(fleets) != 1 {
		t.Fatalf("%d CreateFleet requests for one pending pod, want 1", len(fleets))
	}
	checkOverrides(t, fleets[0], claimTypes(&claim), subnetIDs(class))
	if fleets[0].TargetCapacityType != "on-demand" || fleets[0].AllocationStrategy != "lowest-price" || fleets[0].Type != "instant" {
		t.Errorf("fleet %s %s %s, want instant on-demand lowest-price", fleets[0].Type, fleets[0].TargetCapacityType, fleets[0].AllocationStrategy)
	}
	if it := claim.Labels[v1.LabelInstanceType]; it != "m6a.xlarge" {
		t.Errorf("launched %s, want the cheapest allowed type m6a.xlarge", it)
	}
	in := instanceOf(t, f, claim.Status.ProviderID)
	for k, want := range map[string]string{"karpenter.sh/nodepool": "aws-od", "karpenter.sh/nodeclaim": claim.Name,
		"kubernetes.io/cluster/" + awsCluster: "owned", "team": "platform"} {
		if in.Tags[k] != want {
			t.Errorf("instance tag %s = %q, want %q (tags %v)", k, in.Tags[k], want, in.Tags)
		}
	}
	// The kubelet registers; the pod runs there.
	node := registerAsKubelet(t, kc, &claim, in)
	runOn(t, kc, web, node.Name)

	// The cheapest offering runs short: the launch falls back to the next
	// cheapest, and the next plan leaves the short one out.
	for _, s := range class.Status.Subnets {
		f.InsufficientCapacity("m6a.xlarge", s.Zone, "on-demand")
	}
	second := createPendingPod(t, kc, "aws-web-2", "3", tolerate("aws-od"))
	defer func() { _ = kc.Delete(ctx, second) }()
	next := *waitLaunched(t, kc, newClaimOfPool(t, kc, "aws-od", claim.Name).Name)
	if it := next.Labels[v1.LabelInstanceType]; it != "m5.xlarge" && it != "m6i.xlarge" {
		t.Errorf("with m6a.xlarge short, launched %s; want the next cheapest, m5.xlarge or m6i.xlarge", it)
	}
	// The plan after it knows: the next claim does not list the short type.
	third := createPendingPod(t, kc, "aws-web-3", "3", tolerate("aws-od"))
	defer func() { _ = kc.Delete(ctx, third) }()
	after := *waitLaunched(t, kc, newClaimOfPool(t, kc, "aws-od", claim.Name, next.Name).Name)
	if slices.Contains(claimTypes(&after), "m6a.xlarge") {
		t.Errorf("the claim planned after m6a.xlarge ran short still allows it: %v", claimTypes(&after))
	}
	f.ClearInsufficientCapacity()

	// A spot node is interrupted: the message drains it, a replacement
	// launches for its pod elsewhere, and the message leaves the queue.
	createPool(t, kc, "aws-spot", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements[0].Values = []string{v1.CapacityTypeSpot}
		np.Spec.Template.Spec.Requirements[1].Values = types
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "aws-spot", Effect: corev1.TaintEffectNoSchedule}}
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
	})
	batch := createPendingPod(t, kc, "aws-batch", "3", tolerate("aws-spot"))
	spot := *waitLaunched(t, kc, claimOfPool(t, kc, "aws-spot").Name)
	last := f.Fleets()[len(f.Fleets())-1]
	if last.TargetCapacityType != "spot" || last.AllocationStrategy != "price-capacity-optimized" {
		t.Errorf("spot fleet %s %s, want spot price-capacity-optimized", last.TargetCapacityType, last.AllocationStrategy)
	}
	spotInstance := instanceOf(t, f, spot.Status.ProviderID)
	spotNode := registerAsKubelet(t, kc, &spot, spotInstance)
	runOn(t, kc, batch, spotNode.Name)
	queue := f.CreateQueue(awsCluster) // the Standard account's queue: its URL
	f.SendMessage(queue, spotWarning(spotInstance.ID, spotInstance.Zone))
	eventually(t, "the interrupted claim, its Node and its pod gone", func(ctx context.Context) (bool, error) {
		return gone(ctx, kc, client.ObjectKey{Name: spot.Name}, &v1.NodeClaim{}) && gone(ctx, kc, client.ObjectKey{Name: spotNode.Name}, &corev1.Node{}) &&
			gone(ctx, kc, client.ObjectKeyFromObject(batch), &corev1.Pod{}), nil
	})
	eventually(t, "the message deleted from the queue", func(context.Context) (bool, error) {
		return len(f.QueueMessages(queue)) == 0, nil
	})
	if s := instanceOf(t, f, spot.Status.ProviderID).State; s != "shutting-down" && s != "terminated" {
		t.Errorf("the interrupted instance is %s", s)
	}
	// Its pod, recreated as its ReplicaSet would, gets a replacement that
	// avoids the reclaimed offering.
	again := createPendingPod(t, kc, "aws-batch-2", "3", tolerate("aws-spot"))
	defer func() { _ = kc.Delete(ctx, again) }()
	repl := *waitLaunched(t, kc, newClaimOfPool(t, kc, "aws-spot", spot.Name).Name)
	if repl.Labels[v1.LabelInstanceType] == spot.Labels[v1.LabelInstanceType] && repl.Labels[v1.LabelZone] == spot.Labels[v1.LabelZone] {
		t.Errorf("the replacement launched the reclaimed offering %s in %s", spot.Labels[v1.LabelInstanceType], spot.Labels[v1.LabelZone])
	}

	// The class selects a capacity reservation by tag: its status lists
	// it, and a pool that allows reserved launches a claim into it, through
	// a launch template that targets it.
	zoneA := class.Status.Subnets[0].Zone
	f.AddCapacityReservation(fake.CapacityReservation{ID: "cr-0web", InstanceType: "m6i.xlarge", Zone: zoneA, Total: 1, Tags: map[string]string{"team": "web"}})
	if err := kc.Get(ctx, client.ObjectKeyFromObject(class), class); err != nil {
		t.Fatal(err)
	}
	before := class.DeepCopy()
	class.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "web"}}}
	if err := kc.Patch(ctx, class, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the EC2NodeClass's status listing the reservation its terms select", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKeyFromObject(class), class); err != nil {
			return false, err
		}
		rs := class.Status.CapacityReservations
		return len(rs) == 1 && rs[0].ID == "cr-0web" && rs[0].InstanceType == "m6i.xlarge" && rs[0].AvailabilityZone == zoneA, nil
	})
	if c := meta.FindStatusCondition(class.Status.Conditions, controller.ConditionCapacityReservationsReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("CapacityReservationsReady %+v, want True", c)
	}
	createPool(t, kc, "aws-reserved", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements[0].Values = []string{v1.CapacityTypeReserved, v1.CapacityTypeOnDemand}
		np.Spec.Template.Spec.Requirements[1].Values = types
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "aws-reserved", Effect: corev1.TaintEffectNoSchedule}}
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
	})
	// The controller must have seen the pool before the pod comes: a pass
	// that ran between the two would find no NodePool for the pod and say
	// so in a FailedScheduling event, which the check below counts.
	waitPoolSeen(t, kc, "aws-reserved")
	reservedPod := createPendingPod(t, kc, "aws-reserved-web", "3", tolerate("aws-reserved"))
	defer func() { _ = kc.Delete(ctx, reservedPod) }()
	reserved := *waitLaunched(t, kc, claimOfPool(t, kc, "aws-reserved").Name)
	for k, want := range map[string]string{v1.LabelCapacityType: v1.CapacityTypeReserved, v1.LabelInstanceType: "m6i.xlarge", v1.LabelZone: zoneA,
		"karpenter.k8s.aws/capacity-reservation-id": "cr-0web", "karpenter.k8s.aws/capacity-reservation-type": "default"} {
		if reserved.Labels[k] != want {
			t.Errorf("the reserved claim's label %s = %q, want %q", k, reserved.Labels[k], want)
		}
	}
	if in := instanceOf(t, f, reserved.Status.ProviderID); in.CapacityReservationID != "cr-0web" {
		t.Errorf("the instance runs in reservation %q, want cr-0web", in.CapacityReservationID)
	}
	if free := f.CapacityReservations()[0].Available; free != 0 {
		t.Errorf("the reservation has %d free after the launch, want 0", free)
	}
	// The reservation is full: the next pod of the pool goes on-demand
	// (the engine defers a pod the pass's count leaves no reservation for
	// to the next pass, without a FailedScheduling event, as upstream).
	overflow := createPendingPod(t, kc, "aws-reserved-web-2", "3", tolerate("aws-reserved"))
	defer func() { _ = kc.Delete(ctx, overflow) }()
	od := *waitLaunched(t, kc, newClaimOfPool(t, kc, "aws-reserved", reserved.Name).Name)
	if od.Labels[v1.LabelCapacityType] != v1.CapacityTypeOnDemand || od.Labels["karpenter.k8s.aws/capacity-reservation-id"] != "" {
		t.Errorf("the pod past the reservation got a claim labelled %v, want on-demand", od.Labels)
	}
	if podEvent(ctx, kc, "aws-reserved-web-2", "FailedScheduling", "") || podEvent(ctx, kc, "aws-reserved-web", "FailedScheduling", "") {
		t.Error("a FailedScheduling event for a pod provisioning placed or deferred")
	}
	// The reservation is cancelled: its instance runs on as on-demand,
	// and the claim is relabelled so.
	f.SetCapacityReservationState("cr-0web", "cancelled")
	if err := c.DemoteReservedClaims(ctx); err != nil {
		t.Fatal(err)
	}
	if err := kc.Get(ctx, client.ObjectKeyFromObject(&reserved), &reserved); err != nil {
		t.Fatal(err)
	}
	if reserved.Labels[v1.LabelCapacityType] != v1.CapacityTypeOnDemand || reserved.Labels["karpenter.k8s.aws/capacity-reservation-id"] != "" {
		t.Errorf("after its reservation was cancelled the claim is labelled %v, want on-demand without reservation labels", reserved.Labels)
	}

	// Deleting a NodeClaim terminates its instance.
	if err := kc.Delete(ctx, &claim); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted claim's instance terminated", func(ctx context.Context) (bool, error) {
		s := instanceOf(t, f, claim.Status.ProviderID).State
		return (s == "shutting-down" || s == "terminated") && gone(ctx, kc, client.ObjectKey{Name: claim.Name}, &v1.NodeClaim{}), nil
	})

	// An instance of the cluster no claim knows is collected.
	orphan := f.AddInstance(fake.Instance{InstanceType: "m6i.large", Zone: class.Status.Subnets[0].Zone, SubnetID: class.Status.Subnets[0].ID,
		CapacityType: "on-demand", State: "running", LaunchTime: time.Now().Add(-time.Hour),
		Tags: map[string]string{"kubernetes.io/cluster/" + awsCluster: "owned", "karpenter.sh/managed-by": awsCluster, "karpenter.sh/nodepool": "aws-od"}})
	if err := c.CollectGarbage(ctx); err != nil {
		t.Fatal(err)
	}
	for _, i := range f.Instances() {
		if i.ID == orphan && i.State != "shutting-down" && i.State != "terminated" {
			t.Errorf("the orphan instance %s is %s after garbage collection", orphan, i.State)
		}
	}

	// The class changes as operators change it — another node role, the
	// AMI by an SSM parameter — and resolves again.
	const role2 = "KarpenterNodeRole-production-v2"
	f.AddRole(role2)
	orig := class.DeepCopy()
	class.Spec.Role = role2
	class.Spec.AMIFamily = ptr.To("AL2023") // the CRD requires a family without an alias
	class.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{SSMParameter: "/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id"}}
	if err := kc.Patch(ctx, class, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the changed EC2NodeClass resolved: one AMI, the profile given the new role", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKeyFromObject(class), class); err != nil {
			return false, err
		}
		for _, p := range f.InstanceProfiles() {
			if p.Name == class.Status.InstanceProfile && p.Role == role2 {
				return len(class.Status.AMIs) == 1 && strings.Contains(class.Status.AMIs[0].Name, fake.AL2023Newest), nil
			}
		}
		return false, nil
	})

	// Deleting the class waits for its claims; then its launch templates
	// and the instance profile made for it go, and so does the class.
	profile := class.Status.InstanceProfile
	if err := kc.Delete(ctx, class); err != nil {
		t.Fatal(err)
	}
	if err := kc.Get(ctx, client.ObjectKeyFromObject(class), class); err != nil || !slices.Contains(class.Finalizers, controller.FinalizerNodeClass) {
		t.Fatalf("a deleted EC2NodeClass with NodeClaims (%v): finalizers %v, want it held by %s", err, class.Finalizers, controller.FinalizerNodeClass)
	}
	cleanUpAWS(t, kc, "aws-od", "aws-spot", "aws-reserved")
	eventuallyWithin(t, 2*time.Minute, "the EC2NodeClass gone, with its launch templates and instance profile", func(ctx context.Context) (bool, error) {
		if !gone(ctx, kc, client.ObjectKeyFromObject(class), &awsv1.EC2NodeClass{}) {
			return false, nil
		}
		for _, lt := range f.LaunchTemplates() {
			if lt.Tags["karpenter.k8s.aws/ec2nodeclass"] == class.Name {
				t.Errorf("launch template %s of the deleted class is left", lt.Name)
			}
		}
		for _, p := range f.InstanceProfiles() {
			if p.Name == profile {
				t.Errorf("instance profile %s of the deleted class is left", p.Name)
			}
		}
		return true, nil
	})

	checkPolicyCoversCalls(t, f.Calls())
}

// deleteClass deletes an EC2NodeClass and waits, while its controller
// still runs, for its finalizer to let it go.
func deleteClass(t *testing.T, kc client.Client, class *awsv1.EC2NodeClass) {
	t.Helper()
	if err := kc.Delete(context.Background(), class); client.IgnoreNotFound(err) != nil {
		t.Error(err)
		return
	}
	eventually(t, "EC2NodeClass "+class.Name+" gone", func(ctx context.Context) (bool, error) {
		return gone(ctx, kc, client.ObjectKeyFromObject(class), &awsv1.EC2NodeClass{}), nil
	})
}

// cleanUpAWS deletes the pools' pods, claims and pools, so the tests after
// see none of them.
func cleanUpAWS(t *testing.T, kc client.Client, pools ...string) {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	if err := kc.List(ctx, &pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if strings.HasPrefix(pods.Items[i].Name, "aws-") {
			_ = kc.Delete(ctx, &pods.Items[i])
		}
	}
	for _, pool := range pools {
		if err := kc.DeleteAllOf(ctx, &v1.NodeClaim{}, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
			t.Error(err)
		}
		_ = kc.Delete(ctx, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}})
	}
	eventually(t, "the AWS pools' claims gone", func(ctx context.Context) (bool, error) {
		var left v1.NodeClaimList
		if err := kc.List(ctx, &left); err != nil {
			return false, err
		}
		for _, nc := range left.Items {
			if slices.Contains(pools, nc.Labels[v1.LabelNodePool]) {
				return false, nil
			}
		}
		return true, nil
	})
}

// TestAWSControllerProcess: the joiner binary, `joiner controller
// --cloud-provider aws` configured as the chart configures it (flags) and
// pointed at the fake AWS the way the SDK's default chain allows
// (AWS_ENDPOINT_URL, credentials and region from the environment),
// resolves the seeds' EC2NodeClass and launches a pending pod's claim
// through CreateFleet.
func TestAWSControllerProcess(t *testing.T) {
	ctx := context.Background()
	f := fake.Standard(fake.StandardOptions{Region: "us-east-1", Cluster: awsCluster, KubernetesVersion: "1.37"})
	defer f.Close()
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": f.URL(), "AWS_ACCESS_KEY_ID": "AKIDJOINERTEST", "AWS_SECRET_ACCESS_KEY": "secret",
		"AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"} {
		t.Setenv(k, v)
	}
	_, kc := awsClient(t)
	p := newJoiner(t, buildJoiner(t), "joiner-aws", writeKubeconfig(t), "--cloud-provider=aws", "--cluster-name="+awsCluster,
		"--cluster-endpoint=https://"+awsCluster+".eks.example", "--interruption-queue="+awsCluster, "--batch-idle-duration=100ms", "--batch-max-duration=1s")
	start(t, p)
	class := applySeedNodeClass(t, kc)
	defer func() { // the claims first: the class waits for them
		cleanUpAWS(t, kc, "aws-process")
		deleteClass(t, kc, class)
	}()
	createPool(t, kc, "aws-process", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "aws-process", Effect: corev1.TaintEffectNoSchedule}}
	})
	createPendingPod(t, kc, "aws-process-web", "1", corev1.Toleration{Key: "aws-process", Operator: corev1.TolerationOpExists})
	claim := *waitLaunched(t, kc, claimOfPool(t, kc, "aws-process").Name)
	if err := kc.Get(ctx, client.ObjectKeyFromObject(class), class); err != nil || len(class.Status.Subnets) != 3 {
		t.Errorf("the EC2NodeClass's status has %d subnets (%v), want the three tagged", len(class.Status.Subnets), err)
	}
	in := instanceOf(t, f, claim.Status.ProviderID)
	if in.Tags["karpenter.sh/nodeclaim"] != claim.Name || len(f.Fleets()) != 1 {
		t.Errorf("instance %s tagged %v after %d CreateFleets; want one, for claim %s", in.ID, in.Tags, len(f.Fleets()), claim.Name)
	}
}

// checkResolved: the seeds' EC2NodeClass (alias al2023@v20241011,
// discovery tags, role) resolves to the Standard account's three tagged
// subnets with their zones, the tagged security group, that release's
// x86_64 and arm64 AMIs, and an instance profile made for its role.
func checkResolved(t *testing.T, f *fake.AWS, class *awsv1.EC2NodeClass) {
	t.Helper()
	var zones []string
	for _, s := range class.Status.Subnets {
		zones = append(zones, s.Zone)
		if s.ID == "" || s.ZoneID == "" {
			t.Errorf("subnet %+v lacks its ID or zone ID", s)
		}
	}
	sort.Strings(zones)
	if want := []string{"us-east-1a", "us-east-1b", "us-east-1c"}; !slices.Equal(zones, want) {
		t.Errorf("subnets in %v, want the three tagged ones in %v", zones, want)
	}
	if len(class.Status.SecurityGroups) != 1 || class.Status.SecurityGroups[0].Name != "eks-cluster-sg-"+awsCluster {
		t.Errorf("security groups %+v, want the one tagged", class.Status.SecurityGroups)
	}
	var arches []string
	for _, ami := range class.Status.AMIs {
		if !strings.Contains(ami.Name, "v20241011") {
			t.Errorf("AMI %s (%s) is not of the pinned release v20241011", ami.ID, ami.Name)
		}
		for _, r := range ami.Requirements {
			if r.Key == corev1.LabelArchStable {
				arches = append(arches, r.Values...)
			}
		}
	}
	sort.Strings(arches)
	if !slices.Contains(arches, "amd64") || !slices.Contains(arches, "arm64") {
		t.Errorf("AMIs %+v: want the release's amd64 and arm64 images", class.Status.AMIs)
	}
	if class.Status.InstanceProfile == "" {
		t.Fatal("no instance profile in the status")
	}
	for _, p := range f.InstanceProfiles() {
		if p.Name == class.Status.InstanceProfile {
			if p.Role != class.Spec.Role || p.Tags["kubernetes.io/cluster/"+awsCluster] != "owned" {
				t.Errorf("instance profile %+v: want role %s and the cluster tag", p, class.Spec.Role)
			}
			return
		}
	}
	t.Errorf("instance profile %s is not in the account", class.Status.InstanceProfile)
}

// newClaimOfPool waits for a claim of the pool other than those named.
func newClaimOfPool(t *testing.T, kc client.Client, pool string, not ...string) v1.NodeClaim {
	t.Helper()
	var nc v1.NodeClaim
	eventually(t, "a new NodeClaim of NodePool "+pool, func(ctx context.Context) (bool, error) {
		var list v1.NodeClaimList
		if err := kc.List(ctx, &list, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
			return false, err
		}
		for _, item := range list.Items {
			if !slices.Contains(not, item.Name) && item.DeletionTimestamp == nil {
				nc = item
				return true, nil
			}
		}
		return false, nil
	})
	return nc
}

func gone(ctx context.Context, kc client.Client, key client.ObjectKey, obj client.Object) bool {
	err := kc.Get(ctx, key, obj)
	return err != nil && client.IgnoreNotFound(err) == nil
}

// claimTypes are the instance types the claim allows.
func claimTypes(nc *v1.NodeClaim) []string {
	for _, r := range nc.Spec.Requirements {
		if r.Key == v1.LabelInstanceType && r.Operator == corev1.NodeSelectorOpIn {
			return r.Values
		}
	}
	return nil
}

func subnetIDs(class *awsv1.EC2NodeClass) []string {
	var ids []string
	for _, s := range class.Status.Subnets {
		ids = append(ids, s.ID)
	}
	return ids
}

// checkOverrides: the fleet's overrides are exactly types × subnets.
func checkOverrides(t *testing.T, fl fake.Fleet, types, subnets []string) {
	t.Helper()
	var got, want []string
	for _, o := range fl.Overrides {
		got = append(got, o.InstanceType+"@"+o.SubnetID)
	}
	for _, it := range types {
		for _, s := range subnets {
			want = append(want, it+"@"+s)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("CreateFleet overrides %v, want the plan's types × the selected subnets %v", got, want)
	}
}

// instanceOf finds the fake's instance behind a provider ID
// (aws:///<zone>/<id>).
func instanceOf(t *testing.T, f *fake.AWS, providerID string) fake.Instance {
	t.Helper()
	id := providerID[strings.LastIndex(providerID, "/")+1:]
	for _, in := range f.Instances() {
		if in.ID == id {
			return in
		}
	}
	t.Fatalf("no instance %s (from %s) in the fake account", id, providerID)
	return fake.Instance{}
}

// registerAsKubelet does what the node's kubelet does from its user data:
// registers a Node with the instance's provider ID, the labels and taints
// it was launched with (karpenter.sh/unregistered among them), and
// reports it Ready.
func registerAsKubelet(t *testing.T, kc client.Client, nc *v1.NodeClaim, in fake.Instance) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{corev1.LabelHostname: "ip-" + in.ID, corev1.LabelOSStable: "linux"}
	for k, v := range nc.Labels {
		labels[k] = v
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-" + in.ID + ".ec2.internal", Labels: labels},
		Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID, Taints: append([]corev1.Taint{v1.UnregisteredTaint}, nc.Spec.Taints...)}}
	if err := kc.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	orig := node.DeepCopy() // the controller registers it meanwhile: patch, not update
	node.Status.Capacity = nc.Status.Capacity
	node.Status.Allocatable = nc.Status.Allocatable
	if node.Status.Allocatable == nil {
		node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("14Gi"), corev1.ResourcePods: resource.MustParse("58")}
	}
	if err := kc.Status().Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	registered := waitRegistered(t, kc, nc)
	if registered.Name != node.Name {
		t.Fatalf("claim %s registered as Node %s, not the kubelet's %s", nc.Name, registered.Name, node.Name)
	}
	becomeReady(t, kc, registered)
	return registered
}

// spotWarning is EventBridge's spot interruption warning for an instance.
func spotWarning(id, zone string) string {
	region := zone[:len(zone)-1]
	return fmt.Sprintf(`{"version":"0","id":"1e5527d7-bb36-4607-3370-4164db56a40e","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2",`+
		`"account":"123456789012","time":%q,"region":%q,"resources":["arn:aws:ec2:%s:instance/%s"],"detail":{"instance-id":%q,"instance-action":"terminate"}}`,
		time.Now().UTC().Format(time.RFC3339), region, zone, id, id)
}

// impliedBy are the permissions AWS checks for a call besides the call's
// own, with the calls that need them: CreateFleet launches through
// RunInstances and passes the instance profile's role; tags given at
// creation need the tagging permission too.
var impliedBy = map[string][]string{
	"ec2:RunInstances":       {"ec2:CreateFleet"},
	"iam:PassRole":           {"ec2:CreateFleet"},
	"ec2:CreateTags":         {"ec2:CreateFleet", "ec2:CreateLaunchTemplate"},
	"iam:TagInstanceProfile": {"iam:CreateInstanceProfile"},
}

// checkPolicyCoversCalls: docs/aws/iam-policy.json allows every action the
// provider called and nothing else (besides the permissions those calls
// imply).
func checkPolicyCoversCalls(t *testing.T, calls []fake.Call) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "aws", "iam-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Statement []struct {
			Effect string
			Action json.RawMessage
		}
	}
	if err := json.Unmarshal(b, &policy); err != nil {
		t.Fatalf("docs/aws/iam-policy.json: %v", err)
	}
	allowed := map[string]bool{}
	for _, s := range policy.Statement {
		var actions []string
		if err := json.Unmarshal(s.Action, &actions); err != nil {
			var one string
			if err := json.Unmarshal(s.Action, &one); err != nil {
				t.Fatalf("statement action %s: %v", s.Action, err)
			}
			actions = []string{one}
		}
		for _, a := range actions {
			if s.Effect == "Allow" {
				allowed[a] = true
			}
		}
	}
	called := map[string]bool{}
	for _, c := range calls {
		called[c.IAMAction()] = true
	}
	for a := range called {
		if !allowed[a] {
			t.Errorf("the provider called %s, which docs/aws/iam-policy.json does not allow", a)
		}
	}
	for a := range allowed {
		if !called[a] && !slices.ContainsFunc(impliedBy[a], func(by string) bool { return called[by] }) {
			t.Errorf("docs/aws/iam-policy.json allows %s, which the provider never called nor needed for a call (least privilege)", a)
		}
	}
}
