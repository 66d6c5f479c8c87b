// Package all imports every protocol package, each of which registers its protocols with the
// registry when imported: the one list of Meridian's protocols. Binaries and tests that look
// protocols up by name import it for its side effect.
package all

import (
	_ "github.com/meridian-kv/meridian/ml/geo"
	_ "github.com/meridian-kv/meridian/protocols/baseline/paxos"
	_ "github.com/meridian-kv/meridian/protocols/baseline/rc"
	_ "github.com/meridian-kv/meridian/protocols/baseline/twopc"
	_ "github.com/meridian-kv/meridian/protocols/fullrep/helios"
	_ "github.com/meridian-kv/meridian/protocols/fullrep/mf"
	_ "github.com/meridian-kv/meridian/protocols/fullrep/ogre"
	_ "github.com/meridian-kv/meridian/protocols/log/chariots"
	_ "github.com/meridian-kv/meridian/protocols/log/flstore"
	_ "github.com/meridian-kv/meridian/protocols/partitioned/sdur"
	_ "github.com/meridian-kv/meridian/protocols/smr/alvin"
	_ "github.com/meridian-kv/meridian/protocols/smr/epaxos"
	_ "github.com/meridian-kv/meridian/protocols/smr/multipaxos"
	_ "github.com/meridian-kv/meridian/protocols/tcc/ec"
	_ "github.com/meridian-kv/meridian/protocols/tcc/eiger"
	_ "github.com/meridian-kv/meridian/protocols/tcc/fastccs"
	_ "github.com/meridian-kv/meridian/protocols/tcc/wren"
)
