package aws

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
)

// FinalizeNodeClass removes what the provider made for an EC2NodeClass
// that is being deleted, as upstream's nodeclass termination does: the
// launch templates tagged for it in this cluster, and the instance
// profile made for its role (one given as spec.instanceProfile is the
// user's and stays). The caller makes sure no NodeClaim uses the class
// any more. Whatever is already gone is done.
func (p *Provider) FinalizeNodeClass(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	var errs []error
	pages := ec2.NewDescribeLaunchTemplatesPaginator(p.ec2, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		filter("tag:"+awsv1.LabelNodeClass, nc.Name),
		filter("tag:kubernetes.io/cluster/"+p.opts.ClusterName, "owned"),
	}})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing the launch templates of EC2NodeClass %s: %w", nc.Name, err)
		}
		for _, lt := range page.LaunchTemplates {
			name := aws.ToString(lt.LaunchTemplateName)
			if _, err := p.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: lt.LaunchTemplateName}); err != nil &&
				!isCode(err, "InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.NotFound") {
				errs = append(errs, fmt.Errorf("deleting launch template %s: %w", name, err))
				continue
			}
			p.forgetLaunchTemplate(name)
		}
	}
	if nc.Spec.InstanceProfile == nil && nc.Spec.Role != "" {
		errs = append(errs, p.deleteInstanceProfile(ctx, p.profileName(nc)))
	}
	return errors.Join(errs...)
}

// deleteInstanceProfile takes the profile's roles out and deletes it.
func (p *Provider) deleteInstanceProfile(ctx context.Context, name string) error {
	out, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if isCode(err, "NoSuchEntity") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading instance profile %s: %w", name, err)
	}
	for _, r := range out.InstanceProfile.Roles {
		if _, err := p.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: r.RoleName}); err != nil && !isCode(err, "NoSuchEntity") {
			return fmt.Errorf("removing role %s from instance profile %s: %w", aws.ToString(r.RoleName), name, err)
		}
	}
	if _, err := p.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil && !isCode(err, "NoSuchEntity") {
		return fmt.Errorf("deleting instance profile %s: %w", name, err)
	}
	return nil
}
