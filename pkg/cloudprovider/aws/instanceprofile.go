package aws

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
)

// instanceProfile is the profile nodes launch with: spec.instanceProfile,
// which must exist, or the one made for spec.role, created (tagged, with
// the role) when missing. Creating it twice finds it the second time.
func (p *Provider) instanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	if nc.Spec.InstanceProfile != nil {
		name := *nc.Spec.InstanceProfile
		if _, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil {
			if isCode(err, "NoSuchEntity") {
				return "", fmt.Errorf("instanceProfile %s does not exist: create it, or set role instead", name)
			}
			return "", fmt.Errorf("reading instanceProfile %s: %w", name, err)
		}
		return name, nil
	}
	if nc.Spec.Role == "" {
		return "", errors.New("neither role nor instanceProfile is set: set one")
	}
	role := nc.Spec.Role[strings.LastIndex(nc.Spec.Role, "/")+1:] // a name, or a role ARN
	name := p.profileName(nc)
	tags := p.profileTags(nc)
	out, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	var profile *iamtypes.InstanceProfile
	switch {
	case isCode(err, "NoSuchEntity"):
		created, err := p.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
			InstanceProfileName: aws.String(name),
			Path:                aws.String(fmt.Sprintf("/karpenter/%s/%s/%s/", p.opts.Config.Region, p.opts.ClusterName, nc.UID)),
			Tags:                iamTags(tags),
		})
		switch {
		case isCode(err, "EntityAlreadyExists"): // made meanwhile
			again, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
			if err != nil {
				return "", fmt.Errorf("reading instance profile %s: %w", name, err)
			}
			profile = again.InstanceProfile
		case err != nil:
			return "", fmt.Errorf("creating instance profile %s for role %s: %w", name, role, err)
		default:
			profile = created.InstanceProfile
		}
	case err != nil:
		return "", fmt.Errorf("reading instance profile %s: %w", name, err)
	default:
		profile = out.InstanceProfile
		if missing := missingTags(profile.Tags, tags); len(missing) > 0 {
			if _, err := p.iam.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String(name), Tags: iamTags(missing)}); err != nil {
				return "", fmt.Errorf("tagging instance profile %s: %w", name, err)
			}
		}
	}
	for _, r := range profile.Roles {
		if aws.ToString(r.RoleName) == role {
			return name, nil
		}
		// Another role (spec.role changed): a profile holds one.
		if _, err := p.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: r.RoleName}); err != nil {
			return "", fmt.Errorf("removing role %s from instance profile %s: %w", aws.ToString(r.RoleName), name, err)
		}
	}
	if _, err := p.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(role)}); err != nil {
		if isCode(err, "NoSuchEntity") {
			return "", fmt.Errorf("role %s does not exist: create the node role, or fix spec.role", role)
		}
		return "", fmt.Errorf("adding role %s to instance profile %s: %w", role, name, err)
	}
	return name, nil
}

// profileName is deterministic for the cluster, region and NodeClass, as
// upstream's: <cluster>_<hash>, within IAM's 128 characters.
func (p *Provider) profileName(nc *awsv1.EC2NodeClass) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(p.opts.Config.Region + "/" + nc.Name))
	name := fmt.Sprintf("%s_%d", p.opts.ClusterName, h.Sum64())
	if len(name) > 128 {
		name = name[len(name)-128:]
	}
	return name
}

func (p *Provider) profileTags(nc *awsv1.EC2NodeClass) map[string]string {
	tags := maps.Clone(nc.Spec.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	maps.Copy(tags, map[string]string{
		awsv1.LabelNodeClass:                          nc.Name,
		"kubernetes.io/cluster/" + p.opts.ClusterName: "owned",
		tagManagedBy:                                  p.opts.ClusterName,
		tagEKSClusterName:                             p.opts.ClusterName,
		"topology.kubernetes.io/region":               p.opts.Config.Region,
	})
	return tags
}

func iamTags(m map[string]string) []iamtypes.Tag {
	var out []iamtypes.Tag
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, iamtypes.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

func missingTags(have []iamtypes.Tag, want map[string]string) map[string]string {
	got := map[string]string{}
	for _, t := range have {
		got[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	out := map[string]string{}
	for k, v := range want {
		if got[k] != v {
			out[k] = v
		}
	}
	return out
}

// isCode reports whether err is an AWS API error with one of the codes.
func isCode(err error, codes ...string) bool {
	var api smithy.APIError
	return errors.As(err, &api) && slices.Contains(codes, api.ErrorCode())
}
