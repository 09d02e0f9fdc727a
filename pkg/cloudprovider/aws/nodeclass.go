package aws

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// ResolveNodeClass resolves the NodeClass's selectors: its subnets (with
// zones), security groups, AMIs (with the requirements of the nodes each
// serves) and instance profile (created from the role when missing). The
// status holds what resolved; the error, every selector that did not,
// naming it and the fix. The caller writes the status and its Ready
// condition; launches use the same resolution.
func (p *Provider) ResolveNodeClass(ctx context.Context, nc *awsv1.EC2NodeClass) (awsv1.EC2NodeClassStatus, error) {
	r := p.resolve(ctx, nc)
	return *r.status.DeepCopy(), r.err
}

// resolve looks the NodeClass's selectors up and remembers the result.
func (p *Provider) resolve(ctx context.Context, nc *awsv1.EC2NodeClass) *resolvedClass {
	var st awsv1.EC2NodeClassStatus
	var errs []error
	var err error
	if st.Subnets, err = p.subnets(ctx, nc); err != nil {
		errs = append(errs, err)
	}
	if st.SecurityGroups, err = p.securityGroups(ctx, nc); err != nil {
		errs = append(errs, err)
	}
	if st.AMIs, err = p.amis(ctx, nc); err != nil {
		errs = append(errs, err)
	}
	if st.InstanceProfile, err = p.instanceProfile(ctx, nc); err != nil {
		errs = append(errs, err)
	}
	if p.opts.ReservedCapacity && len(nc.Spec.CapacityReservationSelectorTerms) > 0 {
		if st.CapacityReservations, err = p.capacityReservations(ctx, nc); err != nil {
			errs = append(errs, cloudprovider.NewCapacityReservationsError(err))
		}
	}
	r := &resolvedClass{nodeClass: nc.DeepCopy(), status: st, err: errors.Join(errs...), at: p.opts.Clock.Now()}
	p.mu.Lock()
	p.resolved[nc.Name] = r
	p.mu.Unlock()
	return r
}

// tagFilters select resources by tags, "*" meaning any value.
func tagFilters(tags map[string]string) []ec2types.Filter {
	var out []ec2types.Filter
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if v := tags[k]; v == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	return out
}

func filter(name, value string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: []string{value}}
}

// describeTerm renders a selector term for an error: "tags a=b, id x".
func describeTerm(tags map[string]string, fields ...string) string {
	var parts []string
	if len(tags) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(tags)) {
			kv = append(kv, k+"="+tags[k])
		}
		parts = append(parts, "tags "+strings.Join(kv, ","))
	}
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] != "" {
			parts = append(parts, fields[i]+" "+fields[i+1])
		}
	}
	return strings.Join(parts, ", ")
}

// noMatch is the error for selector terms that matched nothing:
// "no subnet matches subnetSelectorTerms[0] (tags k=v) or [1] (id x): fix".
func noMatch(what, field string, terms []string, fix string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "no %s matches %s", what, field)
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" or ")
		}
		fmt.Fprintf(&b, "[%d] (%s)", i, t)
	}
	fmt.Fprintf(&b, ": %s", fix)
	return errors.New(b.String())
}

// subnets are the subnets any term selects (a term's fields ANDed), the
// ones with the most free addresses first, as upstream orders them.
func (p *Provider) subnets(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.Subnet, error) {
	found := map[string]ec2types.Subnet{}
	var terms []string
	for _, t := range nc.Spec.SubnetSelectorTerms {
		terms = append(terms, describeTerm(t.Tags, "id", t.ID))
		filters := tagFilters(t.Tags)
		if t.ID != "" {
			filters = append(filters, filter("subnet-id", t.ID))
		}
		pages := ec2.NewDescribeSubnetsPaginator(p.ec2, &ec2.DescribeSubnetsInput{Filters: filters})
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing subnets for subnetSelectorTerms: %w", err)
			}
			for _, s := range out.Subnets {
				found[aws.ToString(s.SubnetId)] = s
			}
		}
	}
	if len(found) == 0 {
		return nil, noMatch("subnet", "subnetSelectorTerms", terms, "tag your subnets or fix the selector")
	}
	list := slices.Collect(maps.Values(found))
	sort.Slice(list, func(i, j int) bool {
		a, b := aws.ToInt32(list[i].AvailableIpAddressCount), aws.ToInt32(list[j].AvailableIpAddressCount)
		if a != b {
			return a > b
		}
		return aws.ToString(list[i].SubnetId) < aws.ToString(list[j].SubnetId)
	})
	out := make([]awsv1.Subnet, len(list))
	for i, s := range list {
		out[i] = awsv1.Subnet{ID: aws.ToString(s.SubnetId), Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId)}
	}
	return out, nil
}

// securityGroups are the groups any term selects, by ID.
func (p *Provider) securityGroups(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.SecurityGroup, error) {
	found := map[string]awsv1.SecurityGroup{}
	var terms []string
	for _, t := range nc.Spec.SecurityGroupSelectorTerms {
		terms = append(terms, describeTerm(t.Tags, "id", t.ID, "name", t.Name))
		filters := tagFilters(t.Tags)
		if t.ID != "" {
			filters = append(filters, filter("group-id", t.ID))
		}
		if t.Name != "" {
			filters = append(filters, filter("group-name", t.Name))
		}
		pages := ec2.NewDescribeSecurityGroupsPaginator(p.ec2, &ec2.DescribeSecurityGroupsInput{Filters: filters})
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing security groups for securityGroupSelectorTerms: %w", err)
			}
			for _, g := range out.SecurityGroups {
				id := aws.ToString(g.GroupId)
				found[id] = awsv1.SecurityGroup{ID: id, Name: aws.ToString(g.GroupName)}
			}
		}
	}
	if len(found) == 0 {
		return nil, noMatch("security group", "securityGroupSelectorTerms", terms, "tag your security groups or fix the selector")
	}
	out := slices.Collect(maps.Values(found))
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
