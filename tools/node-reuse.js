// node --expose-gc: 200 short-lived functions a round, each called 30 times, a hot
// loop, then a full GC, for 5 s; V8 frees the round's code and reuses its space.
function hot(n) { let s = 0; for (let i = 0; i < n; i++) s = (s + i * 7) % 1000003; return s; }
const end = Date.now() + 5000;
let s = 0, round = 0;
while (Date.now() < end) {
  const fs = [];
  for (let i = 0; i < 200; i++) fs.push(new Function('a', 'b', 'return a * ' + (round * 200 + i) + ' + b;'));
  for (const f of fs) for (let k = 0; k < 30; k++) s += f(k, s & 7);
  const t = Date.now() + 100;
  while (Date.now() < t) s += hot(2000);
  round++;
  gc();
}
console.log(round, s);
