// General built-ins: null tests, record field access, and the element alerts (`warning`, `critical`)
// that end up in the result object's `warnings`, `alertType` and `alertMessage`.

import { addWarning } from '../env.ts';
import { EvalError } from '../failures.ts';
import { RecordValue, textOf } from '../values.ts';
import { text } from './args.ts';
import { fn, type FnDef } from './types.ts';
import { isForbiddenName } from '../expression/parse.ts';

function rootField(root: string): FnDef {
  return fn({
    name: root,
    min: 1,
    max: 1,
    params: ['text'],
    returns: 'any',
    doc: `A field of the ${root} being calculated (the same as ${root}.<field>); null without a ${root}.`,
    example: `${root}("attribute3")`,
    run(args, env, site) {
      const f = text(args, 0, site);
      if (f === undefined) return null;
      if (isForbiddenName(f)) throw new EvalError(`${root}: the name ${f} is not allowed`);
      const rec = Object.hasOwn(env.roots, root) ? env.roots[root] : null;
      return rec instanceof RecordValue ? rec.get(f) : null;
    },
  });
}

export const CORE: readonly FnDef[] = [
  rootField('product'),
  rootField('customer'),
  rootField('seller'),
  fn({
    name: 'isNull',
    min: 1,
    max: 1,
    params: ['any'],
    returns: 'boolean',
    doc: 'True when the value is null (missing).',
    example: 'isNull(product.attribute3)',
    run(args) {
      return (args[0] ?? null) === null;
    },
  }),
  fn({
    name: 'get',
    min: 2,
    max: 2,
    params: ['record', 'text'],
    returns: 'any',
    doc: 'A field of a record (a look-up row, an extension row, a condition record) by name.',
    example: 'get(lookupRow("Discounts", "EU", "A"), "attribute2")',
    run(args, _env, site) {
      const r = args[0] ?? null;
      const f = text(args, 1, site);
      if (r === null || f === undefined) return null;
      if (!(r instanceof RecordValue)) throw new EvalError('get: argument 1 must be a record');
      if (isForbiddenName(f)) throw new EvalError(`get: the name ${f} is not allowed`);
      return r.get(f);
    },
  }),
  fn({
    name: 'warning',
    min: 1,
    max: 2,
    params: ['any', 'any'],
    returns: (t) => t[1] ?? 'null',
    doc: 'Adds a warning to the element (and a WARNING alert unless one is CRITICAL); returns the second argument (default null).',
    example: 'if(isNull(Cost), warning("no cost for this product"), Cost * 1.2)',
    run(args, env) {
      const msg = textOf(args[0] ?? null);
      addWarning(env, msg);
      if (env.element.alertType === null) {
        env.element.alertType = 'WARNING';
        env.element.alertMessage = msg;
      }
      return args[1] ?? null;
    },
  }),
  fn({
    name: 'critical',
    min: 1,
    max: 2,
    params: ['any', 'any'],
    returns: (t) => t[1] ?? 'null',
    doc: 'Sets the CRITICAL alert of the element (also listed in warnings); returns the second argument (default null).',
    example: 'if(Margin < 0, critical("negative margin", Margin), Margin)',
    run(args, env) {
      const msg = textOf(args[0] ?? null);
      addWarning(env, msg);
      env.element.alertType = 'CRITICAL';
      env.element.alertMessage = msg;
      return args[1] ?? null;
    },
  }),
];
