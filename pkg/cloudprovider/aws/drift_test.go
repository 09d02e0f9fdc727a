package aws

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/fake"
)

// TestIsDrifted: an instance drifts when its AMI, subnet or security
// groups are no longer what its NodeClass selects.
func TestIsDrifted(t *testing.T) {
	x86 := req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large", "c5.large")
	tests := []struct {
		name   string
		change func(e *env, in fake.Instance)
		want   cloudprovider.DriftReason
	}{
		{"nothing changed", func(*env, fake.Instance) {}, ""},
		{"a newer AMI behind al2023@latest", func(e *env, _ fake.Instance) {
			e.aws.AddImage(fake.Image{ID: "ami-0newer", Name: "amazon-eks-node-al2023-x86_64-standard-1.37-v20250101", OwnerID: fake.AmazonOwnerID,
				Architecture: "x86_64", CreationDate: e.clock.Now()})
			e.aws.SetParameter("/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id", "ami-0newer")
			e.clock.Step(resolveTTL)
		}, DriftAMI},
		{"another subnet selected", func(e *env, in fake.Instance) {
			other := fake.StandardSubnetPrefix + "a"
			if in.SubnetID == other {
				other = fake.StandardSubnetPrefix + "b"
			}
			e.update("default", func(nc *awsv1.EC2NodeClass) { nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: other}} })
		}, DriftSubnet},
		{"another security group selected", func(e *env, _ fake.Instance) {
			e.update("default", func(nc *awsv1.EC2NodeClass) {
				nc.Spec.SecurityGroupSelectorTerms = append(nc.Spec.SecurityGroupSelectorTerms, awsv1.SecurityGroupSelectorTerm{ID: fake.UntaggedSecurityGroupID})
			})
		}, DriftSecurityGroup},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nodeClassWith(t, func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
			}))
			nc, err := e.p.Create(e.ctx, claim("c1", "default", x86, onDemand))
			if err != nil {
				t.Fatal(err)
			}
			tt.change(e, e.aws.Instances()[0])
			got, err := e.p.IsDrifted(e.ctx, nc)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("IsDrifted = %q, want %q", got, tt.want)
			}
		})
	}
}
