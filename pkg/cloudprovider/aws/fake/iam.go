package fake

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

var iamService = &service{
	name:           "iam",
	protocol:       awsQuery,
	xmlNamespace:   "https://iam.amazonaws.com/doc/2010-05-08/",
	throttleCode:   "Throttling",
	throttleStatus: http.StatusBadRequest,
	query: map[string]func(*AWS, url.Values) (any, error){
		"GetRole":                  (*AWS).getRole,
		"GetInstanceProfile":       (*AWS).getInstanceProfile,
		"CreateInstanceProfile":    (*AWS).createInstanceProfile,
		"AddRoleToInstanceProfile": (*AWS).addRoleToInstanceProfile,
		"TagInstanceProfile":       (*AWS).tagInstanceProfile,
		// Beyond the brief: what a provider needs to change a profile's role
		// and to clean profiles up.
		"RemoveRoleFromInstanceProfile": (*AWS).removeRoleFromInstanceProfile,
		"DeleteInstanceProfile":         (*AWS).deleteInstanceProfile,
		"ListInstanceProfiles":          (*AWS).listInstanceProfiles,
	},
}

// InstanceProfile is an IAM instance profile.
type InstanceProfile struct {
	Name, Path string
	// Role is the profile's role ("" before AddRoleToInstanceProfile).
	Role string
	Tags map[string]string
	ARN  string
}

type role struct {
	name    string
	created time.Time
}

type iamState struct {
	roles    map[string]role
	profiles map[string]*InstanceProfile
	created  map[string]time.Time
}

func (s *iamState) init() {
	s.roles = map[string]role{}
	s.profiles = map[string]*InstanceProfile{}
	s.created = map[string]time.Time{}
}

// AddRole adds an IAM role that exists (so it can be added to an instance
// profile).
func (f *AWS) AddRole(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.iam.roles[name] = role{name: name, created: f.clock.Now()}
}

// InstanceProfiles are the instance profiles, by name (copies).
func (f *AWS) InstanceProfiles() []InstanceProfile {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]InstanceProfile, 0, len(f.iam.profiles))
	for _, p := range f.iam.profiles {
		c := *p
		c.Tags = copyTags(p.Tags)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func noSuchEntity(format string, args ...any) error {
	return newError(http.StatusNotFound, "NoSuchEntity", format, args...)
}

type xmlIAMTag struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

type xmlRole struct {
	Path       string `xml:"Path"`
	RoleName   string `xml:"RoleName"`
	RoleID     string `xml:"RoleId"`
	Arn        string `xml:"Arn"`
	CreateDate string `xml:"CreateDate"`
	Policy     string `xml:"AssumeRolePolicyDocument"`
}

type xmlInstanceProfile struct {
	Path       string      `xml:"Path"`
	Name       string      `xml:"InstanceProfileName"`
	ID         string      `xml:"InstanceProfileId"`
	Arn        string      `xml:"Arn"`
	CreateDate string      `xml:"CreateDate"`
	Roles      []xmlRole   `xml:"Roles>member"`
	Tags       []xmlIAMTag `xml:"Tags>member,omitempty"`
}

// assumeRolePolicy lets EC2 assume a node role (URL-encoded, as IAM
// answers).
var assumeRolePolicy = url.QueryEscape(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`)

func (f *AWS) xmlRole(name string) xmlRole {
	r := f.iam.roles[name]
	return xmlRole{Path: "/", RoleName: name, RoleID: "AROA" + idSuffix(name),
		Arn:        fmt.Sprintf("arn:aws:iam::%s:role/%s", AccountID, name),
		CreateDate: r.created.UTC().Format(awsTime), Policy: assumeRolePolicy}
}

func (f *AWS) xmlInstanceProfile(p *InstanceProfile) xmlInstanceProfile {
	x := xmlInstanceProfile{Path: p.Path, Name: p.Name, ID: "AIPA" + idSuffix(p.Name), Arn: p.ARN,
		CreateDate: f.iam.created[p.Name].UTC().Format(awsTime), Roles: []xmlRole{}}
	if p.Role != "" {
		x.Roles = append(x.Roles, f.xmlRole(p.Role))
	}
	for _, t := range xmlTags(p.Tags) {
		x.Tags = append(x.Tags, xmlIAMTag(t))
	}
	return x
}

// idSuffix makes a unique-looking ID suffix from a name: 17 upper-case
// hex digits of its hash.
func idSuffix(name string) string {
	sum := sha256.Sum256([]byte(name))
	return strings.ToUpper(hex.EncodeToString(sum[:]))[:17]
}

type getRoleOutput struct {
	Role xmlRole `xml:"Role"`
}

func (f *AWS) getRole(q url.Values) (any, error) {
	name := q.Get("RoleName")
	if _, ok := f.iam.roles[name]; !ok {
		return nil, noSuchEntity("The role with name %s cannot be found.", name)
	}
	return getRoleOutput{Role: f.xmlRole(name)}, nil
}

type instanceProfileOutput struct {
	InstanceProfile xmlInstanceProfile `xml:"InstanceProfile"`
}

func (f *AWS) getInstanceProfile(q url.Values) (any, error) {
	name := q.Get("InstanceProfileName")
	p, ok := f.iam.profiles[name]
	if !ok {
		return nil, noSuchEntity("Instance Profile %s cannot be found.", name)
	}
	return instanceProfileOutput{InstanceProfile: f.xmlInstanceProfile(p)}, nil
}

func (f *AWS) createInstanceProfile(q url.Values) (any, error) {
	name, path := q.Get("InstanceProfileName"), q.Get("Path")
	if path == "" {
		path = "/"
	}
	if _, ok := f.iam.profiles[name]; ok {
		return nil, newError(http.StatusConflict, "EntityAlreadyExists", "Instance Profile %s already exists.", name)
	}
	p := &InstanceProfile{Name: name, Path: path, Tags: iamTags(q),
		ARN: fmt.Sprintf("arn:aws:iam::%s:instance-profile%s%s", AccountID, path, name)}
	f.iam.profiles[name] = p
	f.iam.created[name] = f.clock.Now()
	return instanceProfileOutput{InstanceProfile: f.xmlInstanceProfile(p)}, nil
}

// iamTags reads awsQuery's Tags.member.N.Key / .Value.
func iamTags(q url.Values) map[string]string { return tagList(q, "Tags.member") }

// addRoleToInstanceProfile: both must exist, and a profile holds one role.
func (f *AWS) addRoleToInstanceProfile(q url.Values) (any, error) {
	name, roleName := q.Get("InstanceProfileName"), q.Get("RoleName")
	p, ok := f.iam.profiles[name]
	if !ok {
		return nil, noSuchEntity("Instance Profile %s cannot be found.", name)
	}
	if _, ok := f.iam.roles[roleName]; !ok {
		return nil, noSuchEntity("The role with name %s cannot be found.", roleName)
	}
	if p.Role != "" {
		return nil, newError(http.StatusConflict, "LimitExceeded", "Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1")
	}
	p.Role = roleName
	return nil, nil
}

func (f *AWS) tagInstanceProfile(q url.Values) (any, error) {
	name := q.Get("InstanceProfileName")
	p, ok := f.iam.profiles[name]
	if !ok {
		return nil, noSuchEntity("Instance Profile %s cannot be found.", name)
	}
	for k, v := range iamTags(q) {
		p.Tags[k] = v
	}
	return nil, nil
}

func (f *AWS) removeRoleFromInstanceProfile(q url.Values) (any, error) {
	name, roleName := q.Get("InstanceProfileName"), q.Get("RoleName")
	p, ok := f.iam.profiles[name]
	if !ok {
		return nil, noSuchEntity("Instance Profile %s cannot be found.", name)
	}
	if p.Role != roleName {
		return nil, noSuchEntity("The role with name %s cannot be found in instance profile %s.", roleName, name)
	}
	p.Role = ""
	return nil, nil
}

// deleteInstanceProfile: as IAM, a profile with a role cannot be deleted.
func (f *AWS) deleteInstanceProfile(q url.Values) (any, error) {
	name := q.Get("InstanceProfileName")
	p, ok := f.iam.profiles[name]
	if !ok {
		return nil, noSuchEntity("Instance Profile %s cannot be found.", name)
	}
	if p.Role != "" {
		return nil, newError(http.StatusConflict, "DeleteConflict", "Cannot delete entity, must remove roles from instance profile first.")
	}
	delete(f.iam.profiles, name)
	delete(f.iam.created, name)
	return nil, nil
}

type listInstanceProfilesOutput struct {
	InstanceProfiles []xmlInstanceProfile `xml:"InstanceProfiles>member"`
	IsTruncated      bool                 `xml:"IsTruncated"`
	Marker           string               `xml:"Marker,omitempty"`
}

// listInstanceProfiles answers the profiles under PathPrefix by name,
// MaxItems (default 100) a page, Marker an offset.
func (f *AWS) listInstanceProfiles(q url.Values) (any, error) {
	prefix := q.Get("PathPrefix")
	var names []string
	for name, p := range f.iam.profiles {
		if strings.HasPrefix(p.Path, prefix) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	size, from := 100, 0
	if v, err := strconv.Atoi(q.Get("MaxItems")); err == nil && v > 0 {
		size = min(v, 1000)
	}
	if m := q.Get("Marker"); m != "" {
		v, err := strconv.Atoi(m)
		if err != nil || v < 0 || v > len(names) {
			return nil, badRequest("InvalidInput", "Invalid Marker %q", m)
		}
		from = v
	}
	to := min(from+size, len(names))
	out := listInstanceProfilesOutput{InstanceProfiles: []xmlInstanceProfile{}}
	for _, n := range names[from:to] {
		out.InstanceProfiles = append(out.InstanceProfiles, f.xmlInstanceProfile(f.iam.profiles[n]))
	}
	if to < len(names) {
		out.IsTruncated, out.Marker = true, strconv.Itoa(to)
	}
	return out, nil
}
