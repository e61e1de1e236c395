// chronozarr/map/expression.js: band math over common_name (NDVI, a user formula), parsed once
// and compiled twice: to GLSL for the map's fragment shader and to a JS function for the click
// readout and the stretch statistics, so both agree. Physical values (spec 3.6) go in; a pixel
// where any band used is invalid (spec 2.3), or where the result is not finite, is missing.
//
// Grammar: expr := term (("+"|"-") term)* ; term := unary (("*"|"/") unary)* ;
// unary := "-" unary | power ; power := atom ("^" unary)? ;
// atom := number | name | fn "(" expr ("," expr)* ")" | "(" expr ")".
// Names are a band's common_name or name; functions: abs sqrt log exp min max pow clamp.
// Nothing is passed to eval: both outputs are generated from the parsed tree.

const FUNCS = { abs: 1, sqrt: 1, log: 1, exp: 1, min: 2, max: 2, pow: 2, clamp: 3 };

/**
 * A parsed expression: a number, a band (by index), an operator or a function call.
 * @typedef {{kind: string, [key: string]: any}} ExpressionTree
 */

export const PRESETS = Object.freeze({
  ndvi: "(nir - red) / (nir + red)",
  ndwi: "(green - nir) / (green + nir)",
  nbr: "(nir - swir22) / (nir + swir22)",
});

export class ExpressionError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = "ExpressionError";
  }
}

function tokenize(text) {
  const out = [];
  const re = /\s*(?:(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|(\S))/y;
  let m;
  re.lastIndex = 0;
  while (re.lastIndex < text.length && (m = re.exec(text))) {
    if (m[1] !== undefined) out.push({ kind: "num", value: Number(m[1]) });
    else if (m[2] !== undefined) out.push({ kind: "name", value: m[2] });
    else if (m[3] !== undefined) {
      if (!"+-*/^(),".includes(m[3])) throw new ExpressionError(`unexpected character ${JSON.stringify(m[3])}`);
      out.push({ kind: "op", value: m[3] });
    }
  }
  return out;
}

/**
 * Parse `text` against the store's bands. Returns {tree, bands: [band index, ...]} where bands
 * lists the bands used, in order of first use. Throws ExpressionError naming the problem.
 * @param {string} text
 * @param {{name: string, common_name?: string}[]} storeBands
 * @returns {{tree: ExpressionTree, bands: number[]}}
 */
export function parseExpression(text, storeBands) {
  const tokens = tokenize(String(text ?? ""));
  let i = 0;
  const used = [];
  const peek = () => tokens[i];
  const take = (value) => {
    const t = tokens[i];
    if (!t || t.value !== value)
      throw new ExpressionError(`expected ${JSON.stringify(value)}${t ? ` before ${JSON.stringify(String(t.value))}` : " at the end"}`);
    i++;
  };
  const bandOf = (name) => {
    let b = storeBands.findIndex((x) => x.common_name === name);
    if (b < 0) b = storeBands.findIndex((x) => x.name === name);
    if (b < 0)
      b = storeBands.findIndex((x) => x.name.toLowerCase() === name.toLowerCase() || x.common_name?.toLowerCase() === name.toLowerCase());
    return b;
  };
  const atom = () => {
    const t = tokens[i++];
    if (!t) throw new ExpressionError("the formula ends too early");
    if (t.kind === "num") return { num: t.value };
    if (t.kind === "op" && t.value === "(") {
      const e = expr();
      take(")");
      return e;
    }
    if (t.kind === "name") {
      if (FUNCS[t.value] && peek()?.value === "(") {
        take("(");
        const args = [expr()];
        while (peek()?.value === ",") {
          i++;
          args.push(expr());
        }
        take(")");
        if (args.length !== FUNCS[t.value])
          throw new ExpressionError(`${t.value}() takes ${FUNCS[t.value]} argument(s), got ${args.length}`);
        return { fn: t.value, args };
      }
      const b = bandOf(t.value);
      if (b < 0) {
        const names = storeBands.map((x) => x.common_name ?? x.name).join(", ");
        throw new ExpressionError(`no band named ${JSON.stringify(t.value)} (bands: ${names})`);
      }
      if (!used.includes(b)) used.push(b);
      return { band: b };
    }
    throw new ExpressionError(`unexpected ${JSON.stringify(String(t.value))}`);
  };
  const power = () => {
    const base = atom();
    if (peek()?.value === "^") {
      i++;
      return { fn: "pow", args: [base, unary()] };
    }
    return base;
  };
  const unary = () => {
    if (peek()?.value === "-") {
      i++;
      return { neg: unary() };
    }
    if (peek()?.value === "+") {
      i++;
      return unary();
    }
    return power();
  };
  const term = () => {
    let left = unary();
    while (peek()?.value === "*" || peek()?.value === "/") left = { op: tokens[i++].value, left, right: unary() };
    return left;
  };
  const expr = () => {
    let left = term();
    while (peek()?.value === "+" || peek()?.value === "-") left = { op: tokens[i++].value, left, right: term() };
    return left;
  };
  if (!tokens.length) throw new ExpressionError("the formula is empty");
  const tree = expr();
  if (i < tokens.length) throw new ExpressionError(`unexpected ${JSON.stringify(String(tokens[i].value))}`);
  if (!used.length) throw new ExpressionError("the formula uses no band");
  return { tree, bands: used };
}

const glslFloat = (v) => {
  const s = String(v);
  return /[.eE]/.test(s) ? s : `${s}.0`;
};

/**
 * GLSL expression; `ref(b)` gives the GLSL of band b's physical value.
 * @param {ExpressionTree} tree
 * @param {(band: number) => string} ref
 * @returns {string}
 */
export function toGlsl(tree, ref) {
  const g = (n) => {
    if (n.num !== undefined) return glslFloat(n.num);
    if (n.band !== undefined) return ref(n.band);
    if (n.neg) return `(-${g(n.neg)})`;
    if (n.op) return `(${g(n.left)} ${n.op} ${g(n.right)})`;
    return `${n.fn}(${n.args.map(g).join(", ")})`;
  };
  return g(tree);
}

const JS_FN = {
  abs: Math.abs,
  sqrt: Math.sqrt,
  log: Math.log,
  exp: Math.exp,
  min: Math.min,
  max: Math.max,
  pow: Math.pow,
  clamp: (x, a, b) => Math.min(Math.max(x, a), b),
};

/**
 * JS evaluator: f(physical) where physical[b] is band b's physical value (Math.fround per step, as float32 GLSL).
 * @param {ExpressionTree} tree
 * @returns {(physical: ArrayLike<number>) => number}
 */
export function toFunction(tree) {
  const c = (n) => {
    if (n.num !== undefined) {
      const v = n.num;
      return () => v;
    }
    if (n.band !== undefined) {
      const b = n.band;
      return (p) => p[b];
    }
    if (n.neg) {
      const a = c(n.neg);
      return (p) => -a(p);
    }
    if (n.op) {
      const a = c(n.left);
      const b = c(n.right);
      if (n.op === "+") return (p) => a(p) + b(p);
      if (n.op === "-") return (p) => a(p) - b(p);
      if (n.op === "*") return (p) => a(p) * b(p);
      return (p) => a(p) / b(p);
    }
    const f = JS_FN[n.fn];
    const args = n.args.map(c);
    return (p) => f(...args.map((a) => a(p)));
  };
  return c(tree);
}
