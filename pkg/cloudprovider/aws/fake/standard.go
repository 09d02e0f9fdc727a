package fake

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

// The releases the Standard account's AMIs are of, older and newest.
const (
	AL2023Older        = "v20241011"
	AL2023Newest       = "v20241120"
	BottlerocketOlder  = "v1.26.0"
	BottlerocketNewest = "v1.27.0"
)

// The Standard account's network. Its tagged subnets are
// StandardSubnetPrefix + the zone's letter (subnet-0standarda, …).
const (
	StandardVPCID           = "vpc-0standard"
	StandardSubnetPrefix    = "subnet-0standard"
	UntaggedSubnetID        = "subnet-0untagged"
	StandardSecurityGroupID = "sg-0standard"
	UntaggedSecurityGroupID = "sg-0untagged"
	// AmazonOwnerID owns the Standard account's AMIs (alias amazon).
	AmazonOwnerID = "602401143452"
)

// StandardOptions describe the Standard account.
type StandardOptions struct {
	// Region, default us-east-1; Cluster, default production;
	// KubernetesVersion, default 1.37.
	Region, Cluster, KubernetesVersion string
	// Clock, as Options.Clock.
	Clock clock.PassiveClock
}

// Standard starts a fake with a realistic account for a cluster: VPC
// vpc-0standard; subnets in the region's zones a, b and c (zone IDs
// use1-az1 style) tagged karpenter.sh/discovery: <cluster>, and one
// untagged; security group eks-cluster-sg-<cluster> tagged the same, and
// an untagged one; Amazon's AL2023 (standard, nvidia, neuron) and
// Bottlerocket (standard, nvidia) AMIs for x86_64 and arm64, an older and
// a newer release each, with the public SSM parameters their aliases
// resolve through; the role KarpenterNodeRole-<cluster>; the embedded
// catalog's instance types and prices in the three zones; an SQS queue
// named <cluster>.
func Standard(opts StandardOptions) *AWS {
	if opts.Cluster == "" {
		opts.Cluster = "production"
	}
	if opts.KubernetesVersion == "" {
		opts.KubernetesVersion = "1.37"
	}
	f := New(Options{Region: opts.Region, Clock: opts.Clock})
	discovery := map[string]string{"karpenter.sh/discovery": opts.Cluster}
	zones := []string{f.region + "a", f.region + "b", f.region + "c"}

	f.AddVPC(StandardVPCID, "10.0.0.0/16")
	for i, z := range zones {
		tags := copyTags(discovery)
		tags["Name"] = opts.Cluster + "-private-" + z
		f.AddSubnet(Subnet{ID: StandardSubnetPrefix + z[len(z)-1:], VPCID: StandardVPCID, Zone: z,
			CIDR: fmt.Sprintf("10.0.%d.0/19", 32*i), AvailableIPs: 8187, Tags: tags})
	}
	f.AddSubnet(Subnet{ID: UntaggedSubnetID, VPCID: StandardVPCID, Zone: zones[0], CIDR: "10.0.96.0/19", AvailableIPs: 8187})
	sg := "eks-cluster-sg-" + opts.Cluster
	sgTags := copyTags(discovery)
	sgTags["Name"] = sg
	f.AddSecurityGroup(SecurityGroup{ID: StandardSecurityGroupID, Name: sg, VPCID: StandardVPCID, Tags: sgTags})
	f.AddSecurityGroup(SecurityGroup{ID: UntaggedSecurityGroupID, Name: "default", VPCID: StandardVPCID})

	addAL2023(f, opts.KubernetesVersion)
	addBottlerocket(f, opts.KubernetesVersion)
	f.AddRole("KarpenterNodeRole-" + opts.Cluster)
	c, err := catalog.Default()
	if err != nil {
		panic(fmt.Sprintf("fake: the embedded catalog: %v", err))
	}
	f.SeedCatalog(c, zones)
	f.CreateQueue(opts.Cluster)
	return f
}

// releaseDate is when the Standard account's release was published.
func releaseDate(release string) time.Time {
	dates := map[string]string{
		AL2023Older: "2024-10-11", AL2023Newest: "2024-11-20",
		BottlerocketOlder: "2024-10-17", BottlerocketNewest: "2024-11-21",
	}
	t, _ := time.Parse(time.DateOnly, dates[release])
	return t
}

// imageID is an AMI ID fixed by the image's name.
func imageID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "ami-" + hex.EncodeToString(sum[:])[:17]
}

func (f *AWS) addAmazonImage(name, arch, release string) string {
	id := imageID(name)
	f.AddImage(Image{ID: id, Name: name, OwnerID: AmazonOwnerID, OwnerAlias: "amazon", Architecture: arch,
		CreationDate: releaseDate(release)})
	return id
}

// addAL2023 adds the EKS-optimized AL2023 AMIs and their parameters:
// …/amazon-linux-2023/<arch>/<variant>/recommended/image_id and
// …/<arch>/<variant>/amazon-eks-node-al2023-<arch>-<variant>-<k8s>-<release>/image_id.
func addAL2023(f *AWS, k8s string) {
	for _, arch := range []string{"x86_64", "arm64"} {
		for _, variant := range []string{"standard", "nvidia", "neuron"} {
			if variant == "neuron" && arch == "arm64" {
				continue
			}
			base := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/", k8s, arch, variant)
			for _, release := range []string{AL2023Older, AL2023Newest} {
				name := fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", arch, variant, k8s, release)
				id := f.addAmazonImage(name, arch, release)
				f.SetParameter(base+name+"/image_id", id)
				if release == AL2023Newest {
					f.SetParameter(base+"recommended/image_id", id)
				}
			}
		}
	}
}

// addBottlerocket adds the Bottlerocket AMIs and their parameters:
// /aws/service/bottlerocket/aws-k8s-<k8s>[-nvidia]/<arch>/{latest,<version>}/image_id.
func addBottlerocket(f *AWS, k8s string) {
	for _, arch := range []string{"x86_64", "arm64"} {
		for _, variant := range []string{"", "-nvidia"} {
			base := fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/", k8s, variant, arch)
			for _, release := range []string{BottlerocketOlder, BottlerocketNewest} {
				build := imageID(release)[4:12]
				name := fmt.Sprintf("bottlerocket-aws-k8s-%s%s-%s-%s-%s", k8s, variant, arch, release, build)
				id := f.addAmazonImage(name, arch, release)
				f.SetParameter(base+strings.TrimPrefix(release, "v")+"/image_id", id)
				if release == BottlerocketNewest {
					f.SetParameter(base+"latest/image_id", id)
				}
			}
		}
	}
}
