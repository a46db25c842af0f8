// The rows the Benchmarks view shows for a tuning table (app/tuner.py's format): tile entries are
// variant -> shape class -> entry, variant choices are shape class -> entry.
export function tuneRows(table) {
  const rows = [];
  for (const [variant, classes] of Object.entries(table.variants)) {
    for (const [cls, e] of Object.entries(classes)) {
      rows.push([variant, cls, JSON.stringify(e.params), `${e.relative_time.toFixed(2)}x`, e.cases.join(", ")]);
    }
  }
  for (const [cls, e] of Object.entries(table.choices)) {
    rows.push(["planner's choice", cls, `use ${e.variant}`, `${e.relative_time.toFixed(2)}x`, e.cases.join(", ")]);
  }
  if (!rows.length) rows.push(["–", "–", "the defaults and the rules stay: nothing beat them by 5%", "", ""]);
  return rows;
}
