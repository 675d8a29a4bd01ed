#!/usr/bin/env python3
"""Check run --html's rendered DOM (chromium --dump-dom) against run --json.

usage: html_dom_check.py REPORT.json DOM.html CASE:SAMPLE:UNWINDER [FILTER]
- every sample point x unwinder of the JSON is one td.cell, whose data-verdict and
  v-<verdict> class are the JSON's verdict; each heatmap column is headed by its
  sample's instruction;
- the overview has a row per case, linked to the case's section, and per unwinder the
  worst verdict of the case's first profile and stack size (and the miss mark);
- the filters are drawn; with FILTER (missed or nonok, as the URL's &f= set it) exactly
  the cases the JSON says are hidden are hidden, in the overview and below;
- the legend: every swatch and its text in one item;
- the story of the cell opened by #cell=... sits beside that case's heatmap and shows
  the sample's instruction, its true and emitted CFA rows, its true chain with perf's
  symbols, and no stop reason if the chain is ok.
Exit 0, or 1 with what differs."""
import html.parser
import json
import sys

VOID = {'input', 'br', 'meta', 'img', 'hr', 'link'}
SEV = {'ok': 0, 'consistent': 0, 'truncated': 1, 'skipped': 2, 'duplicate': 3, 'wrong': 4,
       'inconsistent': 4, 'error': 5}


class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.cells, self.case = [], [], None
        self.ov, self.links, self.ids, self.cols = [], [], {}, []
        self.sw_in_item = self.sw = self.items = 0
        self.detail, self.detail_cell, self.detail_case = '', None, None
        self.hidden, self.inputs = set(), set()

    def inside(self, pred):
        return any(pred(t, a) for t, a in self.stack)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get('class') or '').split()
        if a.get('id'):
            self.ids[a['id']] = a
        if tag == 'table' and 'hm' in cls:
            self.case = a.get('data-case')
        if tag == 'td' and 'cell' in cls and a.get('id'):
            self.cells.append((self.case, a['id'], a.get('data-verdict'), cls))
        if tag == 'th' and 'col' in cls:
            self.cols.append((self.case, a.get('data-insn')))
            self.stack.append((tag, a))
            self.stack[-1][1]['_text'] = ''
            return
        if tag == 'tr' and 'ovr' in cls:
            self.ov.append({'case': a.get('data-case'), 'worst': [], 'miss': []})
        if tag == 'td' and 'ovc' in cls and self.ov:
            self.ov[-1]['worst'].append(a.get('data-worst'))
            self.ov[-1]['miss'].append('miss' in cls)
        if tag == 'a' and self.ov and self.inside(lambda t, x: t == 'tr' and 'ovr' in (x.get('class') or '')):
            self.links.append((self.ov[-1]['case'], a.get('href')))
        if tag == 'span' and 'li' in cls:
            self.items += 1
        if tag == 'span' and 'sw' in cls:
            self.sw += 1
            self.sw_in_item += self.inside(lambda t, x: 'li' in (x.get('class') or '').split())
        if tag == 'input':
            self.inputs.add(a.get('id'))
        if 'hidden' in cls and a.get('data-case'):
            self.hidden.add((tag, a['data-case']))
        if tag == 'div' and a.get('id') == 'detail':
            self.detail_cell = a.get('data-cell')
            sec = [x for t, x in self.stack if 'case' in (x.get('class') or '').split()]
            self.detail_case = sec[-1].get('data-case') if sec else None
        if tag not in VOID:
            self.stack.append((tag, a))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        while self.stack:
            t, a = self.stack.pop()
            if t == 'th' and '_text' in a:
                self.cols[-1] = self.cols[-1] + (a['_text'],)
            if t == tag:
                break

    def handle_data(self, data):
        if self.inside(lambda t, a: a.get('id') == 'detail'):
            self.detail += data + '\n'
        if self.stack and '_text' in self.stack[-1][1]:
            self.stack[-1][1]['_text'] += data


def vword(r):
    if 'consistent' in r:
        return 'consistent' if r['consistent'] else 'inconsistent'
    return r['verdict']


def worst(c, name):
    w, miss = None, False
    s0 = c['samples'][0]
    for s in c['samples']:
        if s['profile'] != c['profile'] or s['stack_size'] != s0['stack_size'] or name not in s['unwinders']:
            continue
        r = s['unwinders'][name]
        miss = miss or not r['match']
        if w is None or SEV[vword(r)] > SEV[w]:
            w = vword(r)
    return w or '', miss


def check_cells(rep, dom, cases, errs):
    expected = sum(len(s['unwinders']) for c in rep['cases'] for s in c['samples'])
    if len(dom.cells) != expected:
        errs.append('%d cells, the JSON has %d sample x unwinder results' % (len(dom.cells), expected))
    for case, cid, verdict, cls in dom.cells:
        ci, si, ui = (int(x) for x in cid[1:].split('_'))
        c = cases.get(case)
        if c is None or si >= len(c['samples']):
            errs.append('%s: cell %s has no JSON sample' % (case, cid))
            continue
        names = list(c['samples'][si]['unwinders'])
        jv = c['samples'][si]['unwinders'][names[ui]]['verdict']
        if verdict != jv:
            errs.append('%s %s %s: cell says %s, JSON %s' % (case, c['samples'][si]['where'], names[ui], verdict, jv))
        oracle = 'consistent' in c['samples'][si]['unwinders'][names[ui]]
        if not oracle and 'v-' + jv not in cls:
            errs.append('%s: class %s lacks v-%s' % (cid, ' '.join(cls), jv))
    heads = {}
    for col in dom.cols:
        heads.setdefault(col[0], []).append(col)
    for name, c in cases.items():
        got = heads.get(name, [])
        if len(got) != len(c['samples']):
            errs.append('%s: %d column headers, %d samples' % (name, len(got), len(c['samples'])))
        for col, s in zip(got, c['samples']):
            if col[1] != s['insn'] or s['insn'] not in (col[2] if len(col) > 2 else ''):
                errs.append('%s %s: the column header %r lacks the instruction %r' % (name, s['where'], col[1:], s['insn']))


def check_overview(dom, cases, errs):
    rows = {r['case']: r for r in dom.ov}
    for name, c in cases.items():
        r = rows.get(name)
        if not r:
            errs.append('overview: no row for %s' % name)
            continue
        names = list(c['samples'][0]['unwinders']) if c['samples'] else []
        want = [worst(c, n) for n in names]
        got = list(zip(r['worst'], r['miss']))[:len(names)]
        if got != want:
            errs.append('overview %s: worst %s, the JSON %s' % (name, got, want))
    for case, href in dom.links:
        target = dom.ids.get((href or '#')[1:])
        if not href or not href.startswith('#') or not target or target.get('data-case') != case:
            errs.append('overview: the link of %s (%r) does not lead to its section' % (case, href))
    if len(dom.links) != len(dom.ov):
        errs.append('overview: %d links for %d rows' % (len(dom.links), len(dom.ov)))


def check_filter(dom, cases, flt, errs):
    if not {'f-missed', 'f-nonok'} <= dom.inputs:
        errs.append('filters: inputs %s' % sorted(i for i in dom.inputs if i))
    if not flt:
        if dom.hidden:
            errs.append('filters: %d hidden without a filter' % len(dom.hidden))
        return
    for name, c in cases.items():
        if flt == 'missed':
            show = c['result'] == 'fail'
        else:
            show = any(vword(r) not in ('ok', 'consistent') for s in c['samples'] for r in s['unwinders'].values())
        for tag in ('tr', 'div'):
            if ((tag, name) in dom.hidden) == show:
                errs.append('filter %s: %s %s is %s' % (flt, tag, name,
                                                        'hidden' if (tag, name) in dom.hidden else 'shown'))


def check_story(dom, cases, want_cell, errs):
    if dom.detail_cell != want_cell:
        errs.append('story: opened %s, asked %s' % (dom.detail_cell, want_cell))
        return
    ci, si, ui = (int(x) for x in want_cell.split(':'))
    case = [c for c, cid, v, k in dom.cells if cid == 'c%d_%d_%d' % (ci, si, ui)]
    s = cases[case[0]]['samples'][si] if case else None
    if not s:
        errs.append('story cell %s not drawn' % want_cell)
        return
    if dom.detail_case != case[0]:
        errs.append('story: beside %s, not beside its case %s' % (dom.detail_case, case[0]))
    if s['insn'] not in dom.detail:
        errs.append('story lacks the instruction %r' % s['insn'])
    if 'emitted CFA row: ' + s['cfa_row'] not in dom.detail or 'true CFA row:' not in dom.detail:
        errs.append('story lacks the true or the emitted CFA row (%r)' % s['cfa_row'])
    r = list(s['unwinders'].values())[ui]
    if r['verdict'] == 'ok' and 'why the chain ends' in dom.detail:
        errs.append('story: an ok chain with a stop reason')
    for a, sym in zip(s['truth'], s.get('truth_symbols', [])):
        line = a + (' (%s)' % sym if sym else '')
        if line not in dom.detail:
            errs.append('story lacks truth frame %r' % line)


def main():
    rep = json.load(open(sys.argv[1]))
    dom = Dom()
    dom.feed(open(sys.argv[2], encoding='utf-8').read())
    errs = []
    cases = {c['name']: c for c in rep['cases']}
    check_cells(rep, dom, cases, errs)
    check_overview(dom, cases, errs)
    check_filter(dom, cases, sys.argv[4] if len(sys.argv) > 4 else None, errs)
    if dom.sw < 6 or dom.sw_in_item != dom.sw or dom.items != dom.sw:
        errs.append('legend: %d swatches, %d of them in one of %d items' % (dom.sw, dom.sw_in_item, dom.items))
    check_story(dom, cases, sys.argv[3], errs)
    for e in errs[:20]:
        print('html_dom_check: ' + e)
    print('html_dom_check: %d cells, %d overview rows checked, %d problem(s)' % (len(dom.cells), len(dom.ov), len(errs)))
    return 1 if errs else 0


sys.exit(main())
