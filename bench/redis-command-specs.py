#!/usr/bin/env python3
"""Prints the rows of crates/strata-server/src/commands/command_specs.rs's TABLE from a Redis
source tree's command descriptions: per command (and container|sub), sorted by name, its tips
and its key specifications (flags, begin_search, find_keys); a spec's `notes` are left out.

    python3 bench/redis-command-specs.py /tmp/redis-7.0.15 > rows.rs

DIR is a Redis 7.0 source tree (its src/commands/*.json; nothing of it enters this
repository). Paste the rows between the table's brackets, then `cargo fmt`.
"""
import glob
import json
import sys

if len(sys.argv) != 2:
    sys.exit(__doc__)
src = sys.argv[1]
rows = {}
for f in glob.glob(src + '/src/commands/*.json'):
    d = json.load(open(f))
    for name, c in d.items():
        full = name.lower()
        if 'container' in c:
            full = c['container'].lower() + '|' + full
        tips = ' '.join(t.lower() for t in c.get('command_tips', []))
        specs = []
        for s in c.get('key_specs', []):
            flags = ' '.join(x if x in ('RO','RW','OW','RM') else x.lower() for x in s['flags'])
            b = s['begin_search']
            if 'index' in b:
                begin = 'Begin::Index(%d)' % b['index']['pos']
            elif 'keyword' in b:
                begin = 'Begin::Keyword("%s", %d)' % (b['keyword']['keyword'], b['keyword']['startfrom'])
            else:
                begin = 'Begin::Unknown'
            k = s['find_keys']
            if 'range' in k:
                r = k['range']; find = 'Find::Range(%d, %d, %d)' % (r['lastkey'], r['step'], r['limit'])
            elif 'keynum' in k:
                r = k['keynum']; find = 'Find::Keynum(%d, %d, %d)' % (r['keynumidx'], r['firstkey'], r['step'])
            else:
                find = 'Find::Unknown'
            specs.append('Spec { flags: "%s", begin: %s, find: %s }' % (flags, begin, find))
        if tips or specs:
            rows[full] = (tips, specs)
for name in sorted(rows):
    tips, specs = rows[name]
    if specs:
        inner = ',\n        '.join(specs)
        print('    ("%s", "%s", &[\n        %s,\n    ]),' % (name, tips, inner))
    else:
        print('    ("%s", "%s", &[]),' % (name, tips))
