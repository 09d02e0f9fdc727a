package aws

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// amiFamily is the NodeClass's bootstrap format: its alias' family, else
// spec.amiFamily.
func amiFamily(nc *awsv1.EC2NodeClass) string {
	for _, t := range nc.Spec.AMISelectorTerms {
		if family, _, ok := strings.Cut(t.Alias, "@"); ok {
			switch family {
			case "al2023":
				return awsv1.AMIFamilyAL2023
			case "bottlerocket":
				return awsv1.AMIFamilyBottlerocket
			case "al2":
				return awsv1.AMIFamilyAL2
			}
			return family
		}
	}
	if nc.Spec.AMIFamily != nil {
		return *nc.Spec.AMIFamily
	}
	return awsv1.AMIFamilyCustom
}

// variant is one flavour of an EKS-optimized image: standard, or for
// NVIDIA GPUs or Neuron accelerators. Each serves the instance types its
// requirements select, as upstream's variants do.
type variant string

const (
	variantStandard variant = "standard"
	variantNvidia   variant = "nvidia"
	variantNeuron   variant = "neuron"
)

func (v variant) requirements(arch string) []corev1.NodeSelectorRequirement {
	reqs := []corev1.NodeSelectorRequirement{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{kubeArch(arch)}}}
	switch v {
	case variantStandard:
		reqs = append(reqs,
			corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceGPUManufacturer, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"nvidia"}},
			corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceAccelMfr, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"aws"}})
	case variantNvidia:
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceGPUManufacturer, Operator: corev1.NodeSelectorOpIn, Values: []string{"nvidia"}})
	case variantNeuron:
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceAccelMfr, Operator: corev1.NodeSelectorOpIn, Values: []string{"aws"}})
	}
	return reqs
}

// kubeArch is kubernetes.io/arch for an EC2 architecture.
func kubeArch(ec2Arch string) string {
	if ec2Arch == "x86_64" {
		return "amd64"
	}
	return ec2Arch
}

// aliasParameter is one SSM parameter an alias resolves through.
type aliasParameter struct {
	name    string
	arch    string
	variant variant
}

// aliasParameters are the public SSM parameters naming the images of an
// alias (family@version) for a Kubernetes version, each architecture and
// variant: AL2023's standard, NVIDIA and Neuron images, Bottlerocket's
// standard and NVIDIA ones.
func aliasParameters(alias, k8s string) ([]aliasParameter, error) {
	family, version, ok := strings.Cut(alias, "@")
	if !ok || version == "" {
		return nil, fmt.Errorf("alias %q is not family@version", alias)
	}
	var out []aliasParameter
	switch family {
	case "al2023":
		if version != "latest" && !strings.HasPrefix(version, "v") {
			return nil, fmt.Errorf("alias %q: an al2023 version is latest or vYYYYMMDD", alias)
		}
		for _, av := range []struct {
			arch     string
			variants []variant
		}{{"x86_64", []variant{variantStandard, variantNvidia, variantNeuron}}, {"arm64", []variant{variantStandard, variantNvidia}}} {
			for _, v := range av.variants {
				name := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/recommended/image_id", k8s, av.arch, v)
				if version != "latest" {
					name = fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/amazon-eks-node-al2023-%s-%s-%s-%s/image_id", k8s, av.arch, v, av.arch, v, k8s, version)
				}
				out = append(out, aliasParameter{name: name, arch: av.arch, variant: v})
			}
		}
	case "bottlerocket":
		if version != "latest" && !strings.HasPrefix(version, "v") {
			return nil, fmt.Errorf("alias %q: a bottlerocket version is latest or v1.x.y", alias)
		}
		version = strings.TrimPrefix(version, "v")
		for _, arch := range []string{"x86_64", "arm64"} {
			for _, v := range []variant{variantStandard, variantNvidia} {
				flavour := "aws-k8s-" + k8s
				if v == variantNvidia {
					flavour += "-nvidia"
				}
				out = append(out, aliasParameter{name: fmt.Sprintf("/aws/service/bottlerocket/%s/%s/%s/image_id", flavour, arch, version), arch: arch, variant: v})
			}
		}
	default:
		return nil, fmt.Errorf("alias %q: the aws provider resolves al2023 and bottlerocket aliases; for %s select the image by id, name or tags with amiFamily set", alias, family)
	}
	return out, nil
}

// candidate is an image a term selected, with the requirements it serves.
type candidate struct {
	image ec2types.Image
	reqs  []corev1.NodeSelectorRequirement
}

// amis resolves amiSelectorTerms: aliases through SSM, other terms through
// DescribeImages. Of the images serving the same requirements the newest
// is kept; deprecated images only when an alias or an id names them.
func (p *Provider) amis(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.AMI, error) {
	var cands []candidate
	var terms []string
	for _, t := range nc.Spec.AMISelectorTerms {
		terms = append(terms, describeTerm(t.Tags, "alias", t.Alias, "id", t.ID, "name", t.Name, "owner", t.Owner, "ssmParameter", t.SSMParameter))
		var found []candidate
		var err error
		switch {
		case t.Alias != "":
			found, err = p.aliasImages(ctx, t.Alias)
		case t.SSMParameter != "":
			found, err = p.parameterImage(ctx, t.SSMParameter)
		default:
			found, err = p.queryImages(ctx, t)
		}
		if err != nil {
			return nil, err
		}
		cands = append(cands, found...)
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := aws.ToString(cands[i].image.CreationDate), aws.ToString(cands[j].image.CreationDate)
		if a != b {
			return a > b
		}
		return aws.ToString(cands[i].image.ImageId) < aws.ToString(cands[j].image.ImageId)
	})
	seen := map[string]bool{}
	var out []awsv1.AMI
	for _, c := range cands {
		key := scheduling.FromCoreNodeSelectorRequirements(c.reqs).CacheKey()
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, awsv1.AMI{ID: aws.ToString(c.image.ImageId), Name: aws.ToString(c.image.Name), Deprecated: p.deprecated(c.image), Requirements: c.reqs})
	}
	if len(out) == 0 {
		fix := "tag or name your images, or fix the selector"
		if amiFamily(nc) == awsv1.AMIFamilyAL2023 || amiFamily(nc) == awsv1.AMIFamilyBottlerocket {
			fix = fmt.Sprintf("no image of that release is published for Kubernetes %s; pick a release that is, or @latest", p.opts.KubernetesVersion)
		}
		return nil, noMatch("AMI", "amiSelectorTerms", terms, fix)
	}
	return out, nil
}

func (p *Provider) deprecated(img ec2types.Image) bool {
	t, err := time.Parse(time.RFC3339, aws.ToString(img.DeprecationTime))
	return err == nil && !p.opts.Clock.Now().Before(t)
}

// aliasImages are the images an alias' SSM parameters name; a parameter
// that does not exist (a variant not published for the version) is
// skipped.
func (p *Provider) aliasImages(ctx context.Context, alias string) ([]candidate, error) {
	params, err := aliasParameters(alias, p.opts.KubernetesVersion)
	if err != nil {
		return nil, err
	}
	byName := map[string]aliasParameter{}
	var names []string
	for _, ap := range params {
		byName[ap.name] = ap
		names = append(names, ap.name)
	}
	reqsByImage := map[string][]corev1.NodeSelectorRequirement{}
	var ids []string
	for start := 0; start < len(names); start += 10 { // GetParameters takes 10 names
		out, err := p.ssm.GetParameters(ctx, &ssm.GetParametersInput{Names: names[start:min(start+10, len(names))]})
		if err != nil {
			return nil, fmt.Errorf("resolving alias %s through SSM: %w", alias, err)
		}
		for _, prm := range out.Parameters {
			ap := byName[aws.ToString(prm.Name)]
			id := aws.ToString(prm.Value)
			if _, dup := reqsByImage[id]; !dup {
				ids = append(ids, id)
			}
			reqsByImage[id] = ap.variant.requirements(ap.arch)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	imgs, err := p.describeImages(ctx, &ec2.DescribeImagesInput{ImageIds: ids, IncludeDeprecated: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("describing the images of alias %s: %w", alias, err)
	}
	var out []candidate
	for _, img := range imgs {
		out = append(out, candidate{image: img, reqs: reqsByImage[aws.ToString(img.ImageId)]})
	}
	return out, nil
}

// parameterImage is the image an SSM parameter names.
func (p *Provider) parameterImage(ctx context.Context, name string) ([]candidate, error) {
	out, err := p.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		return nil, fmt.Errorf("reading SSM parameter %s of amiSelectorTerms: %w", name, err)
	}
	imgs, err := p.describeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{aws.ToString(out.Parameter.Value)}, IncludeDeprecated: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("describing the image SSM parameter %s names: %w", name, err)
	}
	return archCandidates(imgs), nil
}

// queryImages are the available images a term's id, name, owner and tags
// select; deprecated ones only by id.
func (p *Provider) queryImages(ctx context.Context, t awsv1.AMISelectorTerm) ([]candidate, error) {
	in := &ec2.DescribeImagesInput{Filters: tagFilters(t.Tags), IncludeDeprecated: aws.Bool(true)}
	if t.ID != "" {
		in.Filters = append(in.Filters, filter("image-id", t.ID))
	}
	if t.Name != "" {
		in.Filters = append(in.Filters, filter("name", t.Name))
	}
	if t.Owner != "" {
		in.Owners = []string{t.Owner}
	}
	in.Filters = append(in.Filters, filter("state", "available"))
	imgs, err := p.describeImages(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("describing images for amiSelectorTerms: %w", err)
	}
	if t.ID == "" {
		kept := imgs[:0]
		for _, img := range imgs {
			if !p.deprecated(img) {
				kept = append(kept, img)
			}
		}
		imgs = kept
	}
	return archCandidates(imgs), nil
}

func archCandidates(imgs []ec2types.Image) []candidate {
	var out []candidate
	for _, img := range imgs {
		reqs := []corev1.NodeSelectorRequirement{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{kubeArch(string(img.Architecture))}}}
		out = append(out, candidate{image: img, reqs: reqs})
	}
	return out
}

func (p *Provider) describeImages(ctx context.Context, in *ec2.DescribeImagesInput) ([]ec2types.Image, error) {
	var out []ec2types.Image
	pages := ec2.NewDescribeImagesPaginator(p.ec2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Images...)
	}
	if out == nil && len(in.ImageIds) > 0 {
		return nil, errors.New("no such image")
	}
	return out, nil
}
