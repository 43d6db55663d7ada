// The approvable registry: how a module (DCR, calculation grids, rebate record groups, ...) plugs
// its documents into the one workflow engine. A module calls `registerApprovable` once, when its
// routes are registered, and submits documents with `submitApprovable` (./service.ts) from its own
// submit operation, inside its own transaction; `/workflowsmanager.submit/{typedId}` does the same
// for any registered type. The engine then calls the module back in the same transaction:
//
//   registerApprovable({
//     typeCode: 'DCR',                      // the document's type code (workflow `code`)
//     label: 'Data change request',
//     submitAccess: 'DCR_SUBMIT',           // permission of /workflowsmanager.submit for this type
//     fields: ['label', 'totalDiscount'],   // optional: names conditions may use (checked on WFD write)
//     async describe(q, ref) {              // the document as conditions see it, locked FOR UPDATE;
//       ...                                 // null when no such document in ref.partitionId (→ 404)
//       return { label, workflowStatus, fields: { label, totalDiscount } };
//     },
//     async beforeSubmit(q, ref) { ... },   // optional: the own submit's rules, for the generic one
//     async onStatus(q, ref, status) {      // SUBMITTED, then APPROVED | DENIED | WITHDRAWN:
//       ...                                 // set your workflowStatus; on APPROVED apply the change.
//     },                                    // Throwing rolls the whole request back.
//   });
//
// `ref` = { partitionId, id, actor (the principal who acted: the request's or the job's), workflowId,
// ownSubmit }. The actor is the one to write as (record history names him, his token or external
// system); `ownSubmit` tells a callback that the module's own submit operation runs this transition
// and goes on after `submitApprovable` returns. Every query of a callback must be scoped by
// `ref.partitionId`. The registry is code configuration (filled at start-up), not request
// state. Registering a type code again replaces the earlier entry (tests build several apps).

import type { Principal } from '../../access/access.ts';
import type { RouteAccess } from '../../access/catalogue.ts';
import type { Queryable } from '../../db/db.ts';
import type { AppError } from '../../http/errors.ts';

/** The statuses an approvable goes through; DRAFT is the document's own state before a submit. */
export type WorkflowStatus = 'SUBMITTED' | 'APPROVED' | 'DENIED' | 'WITHDRAWN';

/** The document a callback is about, and who acts on it. */
export interface DocumentRef {
  readonly partitionId: number;
  /** The document's id in its own type. */
  readonly id: number;
  /** Who acts (submitter, approver, denier, withdrawer): the request's or the job's principal. */
  readonly actor: Principal;
}

export interface ApprovableRef extends DocumentRef {
  readonly workflowId: number;
  /**
   * The module's own submit operation (`submitApprovable(..., { ownSubmit: true })`) runs this
   * transition and goes on after it returns (a DCR approved at once is applied there); false for
   * `/workflowsmanager.*` and for every later decision.
   */
  readonly ownSubmit: boolean;
  /**
   * This transition is the submit request's own (approved at once, no step to wait for): an APPROVED
   * whose apply failed (recorded, committed) returns its error from onStatus, and that request
   * answers it after its transaction commits, as the module's own submit would.
   */
  readonly submitting: boolean;
}

export interface ApprovableRecord {
  /** Shown in workflow lists (e.g. the DCR label). */
  readonly label?: string | null;
  /**
   * The document's own type code in its typedId, where it is not the approvable's (a grid item of two
   * keys is `12.CGI2`, its workflows' `code` is `CGI`): workflows answer it in `approvableTypedId`.
   */
  readonly typeCode?: string;
  /** The document's current workflow status; APPROVED documents cannot be submitted again. */
  readonly workflowStatus?: string | null;
  /** The values definition and step conditions are evaluated on. */
  readonly fields: Readonly<Record<string, unknown>>;
  /**
   * Every name this document has, those without a value (absent from `fields`) included, when the
   * names differ per document (a grid item has the elements of its grid's logic): a condition that
   * reads another name cannot be evaluated on it (-4 on `condition`) instead of reading null.
   * Undefined: a name absent from `fields` reads as null (names checked on WFD writes by `fields`).
   */
  readonly names?: readonly string[];
}

export interface Approvable {
  readonly typeCode: string;
  readonly label: string;
  readonly submitAccess: RouteAccess;
  /** Further type codes that name its documents in typedIds (`CGI1`..`CGI6` for `CGI`). */
  readonly aliases?: readonly string[];
  readonly fields?: readonly string[];
  describe(q: Queryable, ref: DocumentRef): Promise<ApprovableRecord | null>;
  /**
   * The rules of the module's own submit operation that `/workflowsmanager.submit` applies as well
   * (it is not `ownSubmit`): called after `describe` in the same transaction, it throws the catalogue
   * error to answer (an asynchronous submit of the document queued or running: 409 naming its job).
   */
  beforeSubmit?(q: Queryable, ref: DocumentRef): Promise<void>;
  /** Answers an error only for a failed apply in the submit request (`ref.submitting`). */
  onStatus(q: Queryable, ref: ApprovableRef, status: WorkflowStatus): Promise<AppError | void>;
}

const TYPE_CODE = /^[A-Z][A-Z0-9]{0,39}$/;
const approvables = new Map<string, Approvable>();

export function registerApprovable(a: Approvable): void {
  if (!TYPE_CODE.test(a.typeCode)) throw new Error(`bad approvable type code ${a.typeCode}`);
  approvables.set(a.typeCode, a);
}

/** The approvable of a type code: its own, or one of its aliases. */
export function findApprovable(typeCode: string): Approvable | undefined {
  return (
    approvables.get(typeCode) ?? [...approvables.values()].find((a) => a.aliases?.includes(typeCode) === true)
  );
}

export function approvableCodes(): string[] {
  return [...approvables.keys()].sort();
}
