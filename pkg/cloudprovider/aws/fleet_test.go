package aws

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/fake"
)

var (
	threeTypes = req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large", "c5.large", "m6g.large")
	onDemand   = req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand)
	spotOrOD   = req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand)
)

// overrideSet renders a fleet's overrides as type@subnet, sorted.
func overrideSet(fl fake.Fleet) []string {
	var out []string
	for _, o := range fl.Overrides {
		out = append(out, o.InstanceType+"@"+o.SubnetID)
	}
	sort.Strings(out)
	return out
}

func cross(types []string, zones ...string) []string {
	var out []string
	for _, t := range types {
		for _, z := range zones {
			out = append(out, t+"@"+fake.StandardSubnetPrefix+z)
		}
	}
	sort.Strings(out)
	return out
}

// TestCreateLaunchesOneFleet: one instant CreateFleet whose overrides are
// exactly the allowed types × the tagged subnets, on-demand lowest-price,
// tagged; the claim comes back as the instance the fake launched, from
// launch templates holding the NodeClass's settings.
func TestCreateLaunchesOneFleet(t *testing.T) {
	e := newEnvWith(t, envOptions{liveTypes: true}, seedNodeClass(t))
	got, err := e.p.Create(e.ctx, claim("general-abc", "default", threeTypes, onDemand))
	if err != nil {
		t.Fatal(err)
	}
	fleets := e.aws.Fleets()
	if len(fleets) != 1 {
		t.Fatalf("%d fleets, want 1", len(fleets))
	}
	fl := fleets[0]
	if fl.Type != "instant" || fl.TargetCapacityType != "on-demand" || fl.AllocationStrategy != "lowest-price" || fl.TotalCapacity != 1 {
		t.Errorf("fleet %s %s %s ×%d, want instant on-demand lowest-price ×1", fl.Type, fl.TargetCapacityType, fl.AllocationStrategy, fl.TotalCapacity)
	}
	if want := cross([]string{"c5.large", "m5.large", "m6g.large"}, "a", "b", "c"); !reflect.DeepEqual(overrideSet(fl), want) {
		t.Errorf("overrides %v, want %v", overrideSet(fl), want)
	}
	wantTags := map[string]string{"karpenter.sh/nodepool": "general", "karpenter.sh/nodeclaim": "general-abc", "karpenter.k8s.aws/ec2nodeclass": "default",
		"kubernetes.io/cluster/production": "owned", "karpenter.sh/managed-by": "production", "eks:eks-cluster-name": "production", "team": "platform"}
	for _, rt := range []string{"instance", "volume", "fleet"} {
		if !reflect.DeepEqual(fl.TagSpecifications[rt], wantTags) {
			t.Errorf("%s tags %v, want %v", rt, fl.TagSpecifications[rt], wantTags)
		}
	}
	instances := e.aws.Instances()
	if len(instances) != 1 {
		t.Fatalf("%d instances, want 1", len(instances))
	}
	in := instances[0]
	if in.InstanceType != "m6g.large" { // the cheapest on demand
		t.Errorf("launched %s, want m6g.large", in.InstanceType)
	}
	if want := ProviderIDPrefix + in.Zone + "/" + in.ID; got.Status.ProviderID != want {
		t.Errorf("provider ID %q, want %q", got.Status.ProviderID, want)
	}
	for k, v := range map[string]string{v1.LabelInstanceType: "m6g.large", v1.LabelZone: in.Zone, v1.LabelCapacityType: "on-demand",
		v1.LabelArch: "arm64", awsv1.LabelInstanceFamily: "m6g", v1.LabelNodePool: "general", "team": "platform"} {
		if got.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, got.Labels[k], v)
		}
	}
	if !strings.HasPrefix(got.Labels[awsv1.LabelTopologyZoneID], "use1-az") {
		t.Errorf("zone-id label %q", got.Labels[awsv1.LabelTopologyZoneID])
	}
	if cpu := got.Status.Capacity.Cpu().Value(); cpu != 2 || got.Status.Allocatable.Memory().IsZero() {
		t.Errorf("capacity %v, allocatable %v", got.Status.Capacity, got.Status.Allocatable)
	}
	st, _ := e.p.ResolveNodeClass(e.ctx, seedNodeClass(t))
	if got.Status.ImageID != in.ImageID || !strings.Contains(amiName(st, in.ImageID), "arm64-standard-1.37-"+fake.AL2023Older) {
		t.Errorf("image %s (instance's %s, %s)", got.Status.ImageID, in.ImageID, amiName(st, in.ImageID))
	}

	lts := e.aws.LaunchTemplates()
	if len(lts) != 2 {
		t.Fatalf("%d launch templates, want 2 (an x86_64 and an arm64 AMI)", len(lts))
	}
	for _, lt := range lts {
		if !strings.HasPrefix(lt.Name, launchTemplatePrefix) || lt.InstanceProfile != st.InstanceProfile ||
			!reflect.DeepEqual(lt.SecurityGroupIDs, []string{fake.StandardSecurityGroupID}) {
			t.Errorf("launch template %s: profile %s, groups %v", lt.Name, lt.InstanceProfile, lt.SecurityGroupIDs)
		}
		if m := lt.MetadataOptions; m.HTTPTokens != "required" || m.HTTPPutResponseHopLimit != 1 || m.HTTPEndpoint != "enabled" {
			t.Errorf("metadata options %+v, want IMDSv2 required, hop limit 1", m)
		}
		if len(lt.BlockDeviceMappings) != 1 || lt.BlockDeviceMappings[0].DeviceName != "/dev/xvda" || lt.BlockDeviceMappings[0].VolumeSize != 20 ||
			lt.BlockDeviceMappings[0].VolumeType != "gp3" {
			t.Errorf("block devices %+v, want a 20 GiB gp3 /dev/xvda", lt.BlockDeviceMappings)
		}
		if lt.Tags["karpenter.k8s.aws/cluster"] != "production" || lt.Tags["team"] != "platform" {
			t.Errorf("launch template tags %v", lt.Tags)
		}
		ps := parts(t, lt.UserData)
		cfg := nodeConfigOf(t, ps[0][1])
		if dig(cfg, "spec", "cluster", "name") != "production" || dig(cfg, "spec", "cluster", "apiServerEndpoint") != testEndpoint ||
			dig(cfg, "spec", "cluster", "certificateAuthority") != testCA || dig(cfg, "spec", "cluster", "cidr") != testCIDR {
			t.Errorf("NodeConfig cluster %v", dig(cfg, "spec", "cluster"))
		}
		flags := fmt.Sprint(dig(cfg, "spec", "kubelet", "flags"))
		for _, want := range []string{"--node-labels=karpenter.sh/capacity-type=on-demand,karpenter.sh/nodepool=general,team=platform",
			"--register-with-taints=dedicated=general:NoSchedule,karpenter.sh/unregistered:NoExecute"} {
			if !strings.Contains(flags, want) {
				t.Errorf("kubelet flags %s lack %s", flags, want)
			}
		}
	}
	for _, o := range fl.Overrides {
		lt := templateNamed(lts, o.LaunchTemplateName)
		wantArch := "x86_64"
		if o.InstanceType == "m6g.large" {
			wantArch = "arm64"
		}
		if lt == nil || !strings.Contains(amiName(st, lt.ImageID), wantArch+"-standard") {
			t.Errorf("override %s uses template %s", o.InstanceType, o.LaunchTemplateName)
		}
	}
}

func amiName(st awsv1.EC2NodeClassStatus, id string) string {
	for _, a := range st.AMIs {
		if a.ID == id {
			return a.Name
		}
	}
	return ""
}

func templateNamed(lts []fake.LaunchTemplate, name string) *fake.LaunchTemplate {
	for i := range lts {
		if lts[i].Name == name {
			return &lts[i]
		}
	}
	return nil
}

// TestCapacityTypeAndAllocationStrategy: spot when allowed and offered,
// price-capacity-optimized; else on-demand, lowest-price.
func TestCapacityTypeAndAllocationStrategy(t *testing.T) {
	tests := []struct {
		name              string
		capacity          v1.NodeSelectorRequirementWithMinValues
		wantCT, wantAlloc string
	}{
		{"spot or on-demand", spotOrOD, "spot", "price-capacity-optimized"},
		{"spot only", req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot), "spot", "price-capacity-optimized"},
		{"on-demand only", onDemand, "on-demand", "lowest-price"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, seedNodeClass(t))
			got, err := e.p.Create(e.ctx, claim("c", "default", threeTypes, tt.capacity))
			if err != nil {
				t.Fatal(err)
			}
			fl := e.aws.Fleets()[0]
			if fl.TargetCapacityType != tt.wantCT || fl.AllocationStrategy != tt.wantAlloc {
				t.Errorf("fleet %s %s, want %s %s", fl.TargetCapacityType, fl.AllocationStrategy, tt.wantCT, tt.wantAlloc)
			}
			in := e.aws.Instances()[0]
			if in.CapacityType != tt.wantCT || got.Labels[v1.LabelCapacityType] != tt.wantCT {
				t.Errorf("instance %s, claim label %s, want %s", in.CapacityType, got.Labels[v1.LabelCapacityType], tt.wantCT)
			}
		})
	}
}

// TestInsufficientCapacityIsCachedForThreeMinutes: an ICE on the cheapest
// offering falls back in the same fleet, and the next launch leaves that
// offering out until the cache expires on the clock.
func TestInsufficientCapacityIsCachedForThreeMinutes(t *testing.T) {
	e := newEnv(t, seedNodeClass(t))
	e.aws.InsufficientCapacity("m6g.large", "us-east-1a", "on-demand")
	got, err := e.p.Create(e.ctx, claim("c1", "default", threeTypes, onDemand))
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1.LabelInstanceType] == "m6g.large" && got.Labels[v1.LabelZone] == "us-east-1a" {
		t.Fatal("launched the offering without capacity")
	}
	withoutICE := cross([]string{"c5.large", "m5.large", "m6g.large"}, "a", "b", "c")
	var avoided []string
	for _, o := range withoutICE {
		if o != "m6g.large@"+fake.StandardSubnetPrefix+"a" {
			avoided = append(avoided, o)
		}
	}
	available := func() bool {
		its, err := e.p.GetInstanceTypes(e.ctx, nodePool("default"))
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range its {
			for _, o := range it.Offerings {
				if it.Name == "m6g.large" && o.Zone == "us-east-1a" && o.CapacityType == "on-demand" {
					return o.Available
				}
			}
		}
		t.Fatal("no m6g.large offering in us-east-1a")
		return false
	}
	steps := []struct {
		after         string
		wantOverrides []string
		wantAvailable bool
	}{
		{"the ICE", avoided, false},
		{"2m59s", avoided, false},
		{"3m", withoutICE, true},
	}
	for i, s := range steps {
		switch i {
		case 1:
			e.clock.Step(UnavailableFor - 1e9)
		case 2:
			e.clock.Step(1e9)
		}
		if got := available(); got != s.wantAvailable {
			t.Errorf("after %s: m6g.large on-demand in us-east-1a available = %v, want %v", s.after, got, s.wantAvailable)
		}
		if _, err := e.p.Create(e.ctx, claim(fmt.Sprintf("c%d", i+2), "default", threeTypes, onDemand)); err != nil {
			t.Fatal(err)
		}
		fleets := e.aws.Fleets()
		if got := overrideSet(fleets[len(fleets)-1]); !reflect.DeepEqual(got, s.wantOverrides) {
			t.Errorf("after %s: overrides %v, want %v", s.after, got, s.wantOverrides)
		}
	}
}

// TestNothingLaunchedIsInsufficientCapacity: a fleet that launches nothing
// for want of capacity is an InsufficientCapacityError, and so is the next
// launch, without a CreateFleet, while every offering is cached; another
// fleet error is not.
func TestNothingLaunchedIsInsufficientCapacity(t *testing.T) {
	oneType := req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "c5.large")
	t.Run("ICE in every zone", func(t *testing.T) {
		e := newEnv(t, seedNodeClass(t))
		for _, z := range []string{"a", "b", "c"} {
			e.aws.InsufficientCapacity("c5.large", "us-east-1"+z, "on-demand")
		}
		_, err := e.p.Create(e.ctx, claim("c1", "default", oneType, onDemand))
		if !cloudprovider.IsInsufficientCapacityError(err) {
			t.Fatalf("Create: %v, want an InsufficientCapacityError", err)
		}
		_, err = e.p.Create(e.ctx, claim("c2", "default", oneType, onDemand))
		if !cloudprovider.IsInsufficientCapacityError(err) || len(e.aws.Fleets()) != 1 {
			t.Errorf("second Create: %v after %d fleets, want an InsufficientCapacityError without a fleet", err, len(e.aws.Fleets()))
		}
	})
	t.Run("a partial fleet of none", func(t *testing.T) {
		e := newEnv(t, seedNodeClass(t))
		e.aws.PartialFleet(0)
		_, err := e.p.Create(e.ctx, claim("c1", "default", oneType, spotOrOD))
		if !cloudprovider.IsInsufficientCapacityError(err) {
			t.Fatalf("Create: %v, want an InsufficientCapacityError", err)
		}
	})
	t.Run("another error", func(t *testing.T) {
		e := newEnv(t, seedNodeClass(t))
		e.aws.Fail("CreateFleet", "UnauthorizedOperation", 1)
		_, err := e.p.Create(e.ctx, claim("c1", "default", oneType, onDemand))
		if err == nil || cloudprovider.IsInsufficientCapacityError(err) || !strings.Contains(err.Error(), "UnauthorizedOperation") {
			t.Fatalf("Create: %v, want the UnauthorizedOperation, not insufficient capacity", err)
		}
	})
}

// TestThrottledCreateFleetIsRetried by the SDK's standard retryer.
func TestThrottledCreateFleetIsRetried(t *testing.T) {
	e := newEnv(t, seedNodeClass(t))
	e.aws.Throttle("CreateFleet", 2)
	if _, err := e.p.Create(e.ctx, claim("c1", "default", threeTypes, onDemand)); err != nil {
		t.Fatal(err)
	}
	var fleets []fake.Call
	for _, c := range e.aws.Invocations() {
		if c.Action == "CreateFleet" {
			fleets = append(fleets, c)
		}
	}
	if len(fleets) != 1 || fleets[0].Attempt < 3 || fleets[0].Error != "" {
		t.Errorf("CreateFleet invocations %+v, want one, answered on its third attempt (two throttled)", fleets)
	}
	if n := len(e.aws.Instances()); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
}

// TestLaunchTemplatesAreReused on a second launch, and a new one is made
// for a new AMI.
func TestLaunchTemplatesAreReused(t *testing.T) {
	nc := nodeClassWith(t, func(nc *awsv1.EC2NodeClass) {
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
	})
	e := newEnv(t, nc)
	x86 := req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large", "c5.large")
	for i := range 2 {
		if _, err := e.p.Create(e.ctx, claim(fmt.Sprintf("c%d", i), "default", x86, onDemand)); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.calls("CreateLaunchTemplate"); n != 1 {
		t.Errorf("%d CreateLaunchTemplate calls for two launches of one AMI, want 1", n)
	}
	e.aws.AddImage(fake.Image{ID: "ami-0newer", Name: "amazon-eks-node-al2023-x86_64-standard-1.37-v20250101", OwnerID: fake.AmazonOwnerID,
		Architecture: "x86_64", CreationDate: e.clock.Now()})
	e.aws.SetParameter("/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id", "ami-0newer")
	e.clock.Step(resolveTTL)
	got, err := e.p.Create(e.ctx, claim("c3", "default", x86, onDemand))
	if err != nil {
		t.Fatal(err)
	}
	lts := e.aws.LaunchTemplates()
	if len(lts) != 2 || lts[1].ImageID != "ami-0newer" || got.Status.ImageID != "ami-0newer" {
		t.Errorf("launch templates %d (the last of %s), claim's image %s; want a second one of ami-0newer", len(lts), lts[len(lts)-1].ImageID, got.Status.ImageID)
	}
	if fl := e.aws.Fleets(); fl[2].LaunchTemplateName != lts[1].Name {
		t.Errorf("the third fleet launched from %s, want %s", fl[2].LaunchTemplateName, lts[1].Name)
	}
}

// TestBottlerocketLaunch: Bottlerocket TOML user data and its two volumes.
func TestBottlerocketLaunch(t *testing.T) {
	custom := "[settings.host-containers.admin]\nenabled = true\n"
	nc := nodeClassWith(t, func(nc *awsv1.EC2NodeClass) {
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
		nc.Spec.UserData = &custom
	})
	e := newEnv(t, nc)
	if _, err := e.p.Create(e.ctx, claim("c1", "default", req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large"), onDemand)); err != nil {
		t.Fatal(err)
	}
	lt := e.aws.LaunchTemplates()[0]
	var doc map[string]any
	if _, err := toml.Decode(lt.UserData, &doc); err != nil {
		t.Fatalf("user data is not TOML: %v\n%s", err, lt.UserData)
	}
	for path, want := range map[string]any{
		"settings.kubernetes.cluster-name":        "production",
		"settings.kubernetes.api-server":          testEndpoint,
		"settings.kubernetes.cluster-certificate": testCA,
		"settings.host-containers.admin.enabled":  true,
	} {
		if got := dig(doc, strings.Split(path, ".")...); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	labels, _ := dig(doc, "settings", "kubernetes", "node-labels").(map[string]any)
	taints, _ := dig(doc, "settings", "kubernetes", "node-taints").(map[string]any)
	if labels["karpenter.sh/nodepool"] != "general" || fmt.Sprint(taints["dedicated"]) != "[general:NoSchedule]" {
		t.Errorf("node labels %v, taints %v", labels, taints)
	}
	if len(lt.BlockDeviceMappings) != 2 || lt.BlockDeviceMappings[1].DeviceName != "/dev/xvdb" {
		t.Errorf("block devices %+v, want Bottlerocket's OS and data volumes", lt.BlockDeviceMappings)
	}
	st, _ := e.p.ResolveNodeClass(e.ctx, nc)
	if !strings.HasPrefix(amiName(st, lt.ImageID), "bottlerocket-aws-k8s-1.37-x86_64-"+fake.BottlerocketNewest) {
		t.Errorf("launched from %s (%s), want the newest x86_64 Bottlerocket", lt.ImageID, amiName(st, lt.ImageID))
	}
}

// TestDeletedLaunchTemplateIsMadeAgain: a template deleted behind the
// provider's back fails the fleet; the provider makes it again and
// launches once more.
func TestDeletedLaunchTemplateIsMadeAgain(t *testing.T) {
	e := newEnv(t, seedNodeClass(t))
	x86 := req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large")
	if _, err := e.p.Create(e.ctx, claim("c1", "default", x86, onDemand)); err != nil {
		t.Fatal(err)
	}
	name := e.aws.LaunchTemplates()[0].Name
	if _, err := e.p.ec2.DeleteLaunchTemplate(e.ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: &name}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.Create(e.ctx, claim("c2", "default", x86, onDemand)); err != nil {
		t.Fatalf("Create after the template was deleted: %v", err)
	}
	if fleets, creates := len(e.aws.Fleets()), e.calls("CreateLaunchTemplate"); fleets != 3 || creates != 2 {
		t.Errorf("%d fleets and %d CreateLaunchTemplate calls, want 3 (one failed) and 2", fleets, creates)
	}
	if n := len(e.aws.Instances()); n != 2 {
		t.Errorf("%d instances, want 2", n)
	}
}
