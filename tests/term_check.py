#!/usr/bin/env python3
"""Check run's terminal output against the same run's JSON report.

usage: term_check.py OUT.txt REPORT.json COLUMNS

- no line of OUT is wider than COLUMNS;
- the matrix is the table form (a "case ... | unwinder" header), not one line per unwinder;
- each case's row counts only the samples of its first profile and stack size: per cell, the
  number after each verdict code (ok tr sk wr du er; cs ic for the oracle) is the number of
  those samples of the JSON with that verdict (a cell's words may wrap onto the lines below);
- a "why" line naming N cases names N distinct cases, and no why line gives an ok chain a stop
  reason ("ok: no-unwind-info, ...").
Exit 0, or 1 with what differs."""
import json
import re
import sys

CODES = {'ok': 'ok', 'tr': 'truncated', 'sk': 'skipped', 'wr': 'wrong', 'du': 'duplicate', 'er': 'error'}
STOPS = 'end|no-unwind-info|outside-snapshot|bad-unwind-info|max-frames|no-progress|unwinder-error'


def matrix(lines, errs):
    """{case: [cell words per unwinder]} of the first table, and the unwinders' names."""
    head = lines[0] if lines else ''
    if ' | ' not in head or not head.startswith('case '):
        errs.append('the matrix is not the table form (one line per unwinder?): %r' % head)
        return {}, []
    uws = [c.strip() for c in head.split('|')[1:]]
    rows, cur = {}, None
    for line in lines[1:]:
        if not line.strip():
            break
        parts = line.split('|')
        if len(parts) != len(uws) + 1:
            # a long name on its own line; its cells follow
            rows[line.strip()] = [[] for _ in uws]
            cur = line.strip()
            continue
        name = parts[0].split()[0] if parts[0].strip() else None
        if name:
            cur = name
            rows.setdefault(cur, [[] for _ in uws])
        if cur is None:
            errs.append('a continuation line before any case: %r' % line)
            continue
        for u, cell in enumerate(parts[1:]):
            rows[cur][u].extend(cell.split())
    return rows, uws


def counts_of(c):
    """per unwinder, the verdict counts of the case's first profile and stack size"""
    s0 = c['samples'][0]
    out = {}
    for s in c['samples']:
        if s['profile'] != c['profile'] or s['stack_size'] != s0['stack_size']:
            continue
        for name, r in s['unwinders'].items():
            d = out.setdefault(name, {})
            if 'consistent' in r:
                v = 'cs' if r['consistent'] else 'ic'
            else:
                v = [k for k, w in CODES.items() if w == r['verdict']][0]
            d[v] = d.get(v, 0) + 1
    return out


def check_cells(rows, uws, rep, errs):
    checked = 0
    for c in rep['cases']:
        if not c['samples']:
            continue
        if c['name'] not in rows:
            errs.append('%s: no row in the matrix' % c['name'])
            continue
        want = counts_of(c)
        for u, name in enumerate(uws):
            got = {}
            for w in rows[c['name']][u]:
                m = re.fullmatch(r'(ok|tr|sk|wr|du|er|cs|ic)(\d+)', w)
                if m:
                    got[m.group(1)] = got.get(m.group(1), 0) + int(m.group(2))
            if got != want.get(name, {}):
                errs.append('%s %s: the cell counts %s, the JSON %s' % (c['name'], name, got, want.get(name)))
            checked += 1
    return checked


def check_why(lines, names, errs):
    groups = 0
    for i, line in enumerate(lines):
        if re.search(r'\bok( fallback)?: (%s)\b' % STOPS, line):
            errs.append('an ok chain with a stop reason: %r' % line)
        m = re.match(r'  (\S+) at (\S+) in (\d+) cases: ', line)
        if not m:
            continue
        k, listed = i + 1, []
        while k < len(lines) and lines[k].startswith('      '):
            k += 1                  # the reason, wrapped
        while k < len(lines) and re.match(r'    \S', lines[k]):
            listed += [n.strip() for n in lines[k].split(',') if n.strip()]
            k += 1
        n = int(m.group(3))
        if n < 2 or len(listed) != n or len(set(listed)) != n or not set(listed) <= names:
            errs.append('why %r names %d case(s): %s' % (line, len(listed), listed))
        groups += 1
    return groups


def main():
    text = open(sys.argv[1], encoding='utf-8').read()
    rep = json.load(open(sys.argv[2]))
    cols = int(sys.argv[3])
    lines = text.split('\n')
    errs = ['line %d is %d wide (> %d): %r' % (i + 1, len(l), cols, l)
            for i, l in enumerate(lines) if len(l) > cols]
    rows, uws = matrix(lines, errs)
    checked = check_cells(rows, uws, rep, errs) if rows else 0
    groups = check_why(lines, {c['name'] for c in rep['cases']}, errs)
    for e in errs[:20]:
        print('term_check: ' + e)
    print('term_check: %d cells, %d grouped why lines checked, %d problem(s)' % (checked, groups, len(errs)))
    return 1 if errs else 0


sys.exit(main())
