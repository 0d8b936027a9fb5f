package registry

import (
	"sync"
	"time"

	"github.com/weftrun/weft/internal/store/planversions"
	"github.com/weftrun/weft/pkg/api"
)

// DefaultResolveTTL is Config.ResolveTTL's default.
const DefaultResolveTTL = time.Second

// maxResolved bounds the resolutions a resolveCache keeps; past it, the
// cache is emptied and fills again.
const maxResolved = 4096

// resolveCache keeps the versions planRefs resolved to for a while, so
// that starts by planRef read the registry once per ref and TTL, not once
// each: a start that carries its plan reads nothing either. A push, an
// archive or a restore through this registry forgets the plan's entries
// at once; one through another gateway is seen within the TTL. Safe for
// concurrent use.
type resolveCache struct {
	ttl time.Duration
	now func() time.Time
	mu  sync.Mutex
	m   map[planversions.Key]resolved
}

// resolved is one resolution and when it expires.
type resolved struct {
	v       api.PlanVersion
	expires time.Time
}

// get returns k's resolution while it has not expired.
func (c *resolveCache) get(k planversions.Key) (api.PlanVersion, bool) {
	if c.ttl <= 0 {
		return api.PlanVersion{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[k]
	if !ok || !c.now().Before(r.expires) {
		return api.PlanVersion{}, false
	}
	return r.v, true
}

// put keeps v as k's resolution for the TTL.
func (c *resolveCache) put(k planversions.Key, v api.PlanVersion) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxResolved {
		c.m = map[planversions.Key]resolved{}
	}
	c.m[k] = resolved{v: v, expires: c.now().Add(c.ttl)}
}

// forget drops every resolution of plan k.PlanID of k's tenant and
// project, whatever version it names ("latest" may name another now).
func (c *resolveCache) forget(k planversions.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.m {
		if key.TenantID == k.TenantID && key.ProjectID == k.ProjectID && key.PlanID == k.PlanID {
			delete(c.m, key)
		}
	}
}
