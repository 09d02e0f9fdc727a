package aws

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/fake"
)

// TestSeedNodeClassResolves: the seeds' production EC2NodeClass resolves
// in the Standard account to the three tagged subnets, the tagged security
// group, the v20241011 images for both architectures (standard, NVIDIA and
// Neuron variants), and an instance profile made for its role — once.
func TestSeedNodeClassResolves(t *testing.T) {
	nc := seedNodeClass(t)
	e := newEnv(t, nc)
	st, err := e.p.ResolveNodeClass(e.ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	var subnets []string
	for _, s := range st.Subnets {
		if s.ZoneID == "" {
			t.Errorf("subnet %s has no zone ID", s.ID)
		}
		subnets = append(subnets, s.ID+"@"+s.Zone)
	}
	sort.Strings(subnets)
	if want := []string{"subnet-0standarda@us-east-1a", "subnet-0standardb@us-east-1b", "subnet-0standardc@us-east-1c"}; !reflect.DeepEqual(subnets, want) {
		t.Errorf("subnets %v, want %v", subnets, want)
	}
	if want := []awsv1.SecurityGroup{{ID: fake.StandardSecurityGroupID, Name: "eks-cluster-sg-production"}}; !reflect.DeepEqual(st.SecurityGroups, want) {
		t.Errorf("security groups %v, want %v", st.SecurityGroups, want)
	}
	var amis []string
	for _, a := range st.AMIs {
		if !strings.HasSuffix(a.Name, "-1.37-"+fake.AL2023Older) {
			t.Errorf("AMI %s (%s) is not of release %s", a.ID, a.Name, fake.AL2023Older)
		}
		amis = append(amis, fmt.Sprintf("%s %v", strings.TrimSuffix(strings.TrimPrefix(a.Name, "amazon-eks-node-al2023-"), "-1.37-"+fake.AL2023Older), a.Requirements))
	}
	sort.Strings(amis)
	arch := func(a string) string { return fmt.Sprintf("{kubernetes.io/arch In [%s]}", a) }
	nvidiaNotIn := "{karpenter.k8s.aws/instance-gpu-manufacturer NotIn [nvidia]}"
	neuronNotIn := "{karpenter.k8s.aws/instance-accelerator-manufacturer NotIn [aws]}"
	want := []string{
		"arm64-nvidia [" + arch("arm64") + " {karpenter.k8s.aws/instance-gpu-manufacturer In [nvidia]}]",
		"arm64-standard [" + arch("arm64") + " " + nvidiaNotIn + " " + neuronNotIn + "]",
		"x86_64-neuron [" + arch("amd64") + " {karpenter.k8s.aws/instance-accelerator-manufacturer In [aws]}]",
		"x86_64-nvidia [" + arch("amd64") + " {karpenter.k8s.aws/instance-gpu-manufacturer In [nvidia]}]",
		"x86_64-standard [" + arch("amd64") + " " + nvidiaNotIn + " " + neuronNotIn + "]",
	}
	if !reflect.DeepEqual(amis, want) {
		t.Errorf("AMIs\n%s\nwant\n%s", strings.Join(amis, "\n"), strings.Join(want, "\n"))
	}
	profiles := e.aws.InstanceProfiles()
	if len(profiles) != 1 {
		t.Fatalf("instance profiles %+v, want one", profiles)
	}
	ip := profiles[0]
	if ip.Name != st.InstanceProfile || ip.Role != "KarpenterNodeRole-production" {
		t.Errorf("instance profile %+v, status says %q; want role KarpenterNodeRole-production", ip, st.InstanceProfile)
	}
	for k, v := range map[string]string{"karpenter.k8s.aws/ec2nodeclass": "default", "kubernetes.io/cluster/production": "owned",
		"karpenter.sh/managed-by": "production", "eks:eks-cluster-name": "production", "team": "platform"} {
		if ip.Tags[k] != v {
			t.Errorf("instance profile tag %s = %q, want %q", k, ip.Tags[k], v)
		}
	}
	// Resolving again finds the profile.
	if _, err := e.p.ResolveNodeClass(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	if n := e.calls("CreateInstanceProfile"); n != 1 {
		t.Errorf("%d CreateInstanceProfile calls after two resolutions, want 1", n)
	}
	if n := e.calls("AddRoleToInstanceProfile"); n != 1 {
		t.Errorf("%d AddRoleToInstanceProfile calls after two resolutions, want 1", n)
	}
}

// TestResolveErrorsNameTheSelectorAndTheFix, and a launch on a NodeClass
// that does not resolve is a NodeClassNotReadyError.
func TestResolveErrorsNameTheSelectorAndTheFix(t *testing.T) {
	missing := "no-such-profile"
	tests := []struct {
		name   string
		change func(*awsv1.EC2NodeClass)
		want   string
	}{
		{"untagged subnets", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "prod"}}}
		}, "no subnet matches subnetSelectorTerms[0] (tags karpenter.sh/discovery=prod): tag your subnets or fix the selector"},
		{"two subnet terms", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"tier": "*"}}, {ID: "subnet-0nothere"}}
		}, "no subnet matches subnetSelectorTerms[0] (tags tier=*) or [1] (id subnet-0nothere): tag your subnets or fix the selector"},
		{"security group by name", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: "nodes"}}
		}, "no security group matches securityGroupSelectorTerms[0] (name nodes): tag your security groups or fix the selector"},
		{"an AL2023 release not published", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@v20200101"}}
		}, "no AMI matches amiSelectorTerms[0] (alias al2023@v20200101): no image of that release is published for Kubernetes 1.37"},
		{"an instance profile that does not exist", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Role, nc.Spec.InstanceProfile = "", &missing
		}, "instanceProfile no-such-profile does not exist: create it, or set role instead"},
		{"a role that does not exist", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Role = "NoSuchRole"
		}, "role NoSuchRole does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := nodeClassWith(t, tt.change)
			e := newEnv(t, nc)
			_, err := e.p.ResolveNodeClass(e.ctx, nc)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			_, err = e.p.Create(e.ctx, claim("c", nc.Name))
			if !cloudprovider.IsNodeClassNotReadyError(err) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Create: %v, want a NodeClassNotReadyError saying %q", err, tt.want)
			}
			if len(e.aws.Fleets()) != 0 {
				t.Error("a fleet was launched from a NodeClass that does not resolve")
			}
		})
	}
}

// TestAMISelection: images by name, owner, id and tags, newest first per
// architecture, deprecated ones only by id; Bottlerocket aliases.
func TestAMISelection(t *testing.T) {
	tests := []struct {
		name  string
		terms []awsv1.AMISelectorTerm
		want  []string // names, by arch
	}{
		{"al2023@latest", []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, []string{
			"amazon-eks-node-al2023-arm64-nvidia-1.37-v20241120", "amazon-eks-node-al2023-arm64-standard-1.37-v20241120",
			"amazon-eks-node-al2023-x86_64-neuron-1.37-v20241120", "amazon-eks-node-al2023-x86_64-nvidia-1.37-v20241120",
			"amazon-eks-node-al2023-x86_64-standard-1.37-v20241120"}},
		{"bottlerocket@v1.26.0", []awsv1.AMISelectorTerm{{Alias: "bottlerocket@v1.26.0"}}, []string{
			"bottlerocket-aws-k8s-1.37-arm64-v1.26.0", "bottlerocket-aws-k8s-1.37-nvidia-arm64-v1.26.0",
			"bottlerocket-aws-k8s-1.37-nvidia-x86_64-v1.26.0", "bottlerocket-aws-k8s-1.37-x86_64-v1.26.0"}},
		{"by name wildcard, newest per arch", []awsv1.AMISelectorTerm{{Name: "amazon-eks-node-al2023-*-standard-1.37-*", Owner: "amazon"}}, []string{
			"amazon-eks-node-al2023-arm64-standard-1.37-v20241120", "amazon-eks-node-al2023-x86_64-standard-1.37-v20241120"}},
		{"by tags", []awsv1.AMISelectorTerm{{Tags: map[string]string{"golden": "*"}}}, []string{"golden-x86_64"}},
		{"deprecated only by id", []awsv1.AMISelectorTerm{{Name: "old-*"}, {ID: "ami-0deprecated"}}, []string{"old-deprecated-arm64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := nodeClassWith(t, func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = tt.terms
				family := awsv1.AMIFamilyAL2023
				if tt.terms[0].Alias == "" {
					nc.Spec.AMIFamily = &family
				}
			})
			e := newEnv(t, nc)
			e.aws.AddImage(fake.Image{ID: "ami-0golden", Name: "golden-x86_64", OwnerID: fake.AccountID, Architecture: "x86_64",
				CreationDate: e.clock.Now().AddDate(0, -1, 0), Tags: map[string]string{"golden": "yes"}})
			past := e.clock.Now().AddDate(-1, 0, 0)
			e.aws.AddImage(fake.Image{ID: "ami-0deprecated", Name: "old-deprecated-arm64", OwnerID: fake.AccountID, Architecture: "arm64",
				CreationDate: past.AddDate(-1, 0, 0), DeprecationTime: &past})
			st, err := e.p.ResolveNodeClass(e.ctx, nc)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, a := range st.AMIs {
				n := a.Name
				if i := strings.LastIndex(n, "-v1.2"); i > 0 && strings.HasPrefix(n, "bottlerocket") {
					n = n[:i+len("-v1.26.0")] // drop the build
				}
				names = append(names, n)
			}
			sort.Strings(names)
			if !reflect.DeepEqual(names, tt.want) {
				t.Errorf("AMIs %v, want %v", names, tt.want)
			}
			for _, a := range st.AMIs {
				if a.Requirements[0].Key != corev1.LabelArchStable {
					t.Errorf("AMI %s: requirements %v do not begin with the architecture", a.Name, a.Requirements)
				}
			}
		})
	}
}

// TestInstanceProfile: spec.instanceProfile is used as it is; the profile
// made for spec.role follows a change of the role, and gets its tags back.
func TestInstanceProfile(t *testing.T) {
	t.Run("given", func(t *testing.T) {
		name := "NodesProfile"
		nc := nodeClassWith(t, func(nc *awsv1.EC2NodeClass) { nc.Spec.Role, nc.Spec.InstanceProfile = "", &name })
		e := newEnv(t, nc)
		if _, err := e.p.iam.CreateInstanceProfile(e.ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: &name}); err != nil {
			t.Fatal(err)
		}
		st, err := e.p.ResolveNodeClass(e.ctx, nc)
		if err != nil || st.InstanceProfile != name {
			t.Fatalf("instance profile %q, %v; want %s", st.InstanceProfile, err, name)
		}
		if n := e.calls("CreateInstanceProfile") + e.calls("AddRoleToInstanceProfile"); n != 1 {
			t.Errorf("the provider changed a profile it was given (%d calls)", n-1)
		}
	})
	t.Run("a new role", func(t *testing.T) {
		nc := seedNodeClass(t)
		e := newEnv(t, nc)
		if _, err := e.p.ResolveNodeClass(e.ctx, nc); err != nil {
			t.Fatal(err)
		}
		e.aws.AddRole("NewNodeRole")
		nc.Spec.Role = "arn:aws:iam::123456789012:role/NewNodeRole"
		nc.Spec.Tags = map[string]string{"team": "platform", "cost-center": "42"}
		if _, err := e.p.ResolveNodeClass(e.ctx, nc); err != nil {
			t.Fatal(err)
		}
		ps := e.aws.InstanceProfiles()
		if len(ps) != 1 || ps[0].Role != "NewNodeRole" || ps[0].Tags["cost-center"] != "42" {
			t.Errorf("profiles %+v, want one with NewNodeRole and the new tag", ps)
		}
	})
}
