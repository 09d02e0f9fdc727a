package state

import (
	"maps"
	"slices"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// draObjects are the Dynamic Resource Allocation objects a Store holds:
// claims and templates by namespace/name, classes and slices by name.
type draObjects struct {
	claims    map[string]*resourceapi.ResourceClaim
	templates map[string]*resourceapi.ResourceClaimTemplate
	classes   map[string]*resourceapi.DeviceClass
	slices    map[string]*resourceapi.ResourceSlice
	// built is the provisioning view of them; nil when something changed.
	built *provisioning.DRAObjects
}

// setIn sets (*m)[key] to v, making the map first.
func setIn[T any](m *map[string]T, key string, v T) {
	if *m == nil {
		*m = map[string]T{}
	}
	(*m)[key] = v
}

// SetResourceClaim adds or replaces a ResourceClaim.
func (s *Store) SetResourceClaim(c *resourceapi.ResourceClaim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	setIn(&s.dra.claims, podutil.Namespace(c.ObjectMeta)+"/"+c.Name, c)
	s.dra.built = nil
}

// DeleteResourceClaim forgets a ResourceClaim.
func (s *Store) DeleteResourceClaim(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.dra.claims, namespace+"/"+name)
	s.dra.built = nil
}

// ResourceClaim is the claim namespace/name, nil when the Store has none.
func (s *Store) ResourceClaim(namespace, name string) *resourceapi.ResourceClaim {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dra.claims[namespace+"/"+name]
}

// SetResourceClaimTemplate adds or replaces a ResourceClaimTemplate.
func (s *Store) SetResourceClaimTemplate(t *resourceapi.ResourceClaimTemplate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	setIn(&s.dra.templates, podutil.Namespace(t.ObjectMeta)+"/"+t.Name, t)
	s.dra.built = nil
}

// ResourceClaimTemplate is the template namespace/name, nil when the Store
// has none.
func (s *Store) ResourceClaimTemplate(namespace, name string) *resourceapi.ResourceClaimTemplate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dra.templates[namespace+"/"+name]
}

// DeleteResourceClaimTemplate forgets a ResourceClaimTemplate.
func (s *Store) DeleteResourceClaimTemplate(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.dra.templates, namespace+"/"+name)
	s.dra.built = nil
}

// SetDeviceClass adds or replaces a DeviceClass.
func (s *Store) SetDeviceClass(c *resourceapi.DeviceClass) {
	s.mu.Lock()
	defer s.mu.Unlock()
	setIn(&s.dra.classes, c.Name, c)
	s.dra.built = nil
}

// DeleteDeviceClass forgets a DeviceClass.
func (s *Store) DeleteDeviceClass(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.dra.classes, name)
	s.dra.built = nil
}

// SetResourceSlice adds or replaces a ResourceSlice.
func (s *Store) SetResourceSlice(sl *resourceapi.ResourceSlice) {
	s.mu.Lock()
	defer s.mu.Unlock()
	setIn(&s.dra.slices, sl.Name, sl)
	s.dra.built = nil
}

// DeleteResourceSlice forgets a ResourceSlice.
func (s *Store) DeleteResourceSlice(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.dra.slices, name)
	s.dra.built = nil
}

// DRA are the Store's device objects as provisioning reads them, each
// list in key order (nil when the Store has none). It never changes.
func (s *Store) DRA() *provisioning.DRAObjects {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draLocked()
}

func (s *Store) draLocked() *provisioning.DRAObjects {
	d := &s.dra
	if d.built != nil {
		return d.built
	}
	if len(d.claims)+len(d.templates)+len(d.classes)+len(d.slices) == 0 {
		return nil
	}
	o := &provisioning.DRAObjects{}
	for _, k := range slices.Sorted(maps.Keys(d.claims)) {
		o.Claims = append(o.Claims, d.claims[k])
	}
	for _, k := range slices.Sorted(maps.Keys(d.templates)) {
		o.Templates = append(o.Templates, d.templates[k])
	}
	for _, k := range slices.Sorted(maps.Keys(d.classes)) {
		o.Classes = append(o.Classes, d.classes[k])
	}
	for _, k := range slices.Sorted(maps.Keys(d.slices)) {
		o.Slices = append(o.Slices, d.slices[k])
	}
	d.built = o
	return o
}
