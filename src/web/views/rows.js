// Starter rows a phone added (SPEC §12; decision 0041; docs/guide/phone-app.md, "Your own
// starters"), on the New page: listed with the applied starters (badge, a Remove button), and an
// "Add starter" form — a name, what it runs (an agent the machine has an applied starter of, or a
// typed line when the bridge allows free text), a model and "No prompts". The bridge decides what
// may be added (`GET /api/starters/{machine}` says `adds`, `free_text` and `templates`); every
// refusal is its own words. Names and lines are set as text.

import { api } from '../client.js';
import { confirmDialog, h } from '../dom.js';
import { t } from '../i18n.js';
import { nameProblem, refusal, unpaired } from '../manage.js';

/** What a row runs, for the line under its name. */
function rowDetail(r) {
  const runs = r.agent === 'line' ? t('Runs a typed line')
    : r.model ? t('Runs {agent} ({model})', { agent: r.agent, model: r.model })
      : t('Runs {agent}', { agent: r.agent });
  return t('{runs} · added by {device}', { runs, device: r.added_by });
}

/**
 * The rows of the start list for the machine's added rows: a button (name and badge) that starts
 * it through `start(button, row)`, the detail, and a Remove button that calls `remove(row)`.
 */
export function addedRows(rows, start, remove) {
  return rows.map((r, i) => {
    const detailId = `start-row-${i}-detail`;
    const item = { ...r, row: true };
    const button = h('button', { type: 'button', class: 'start start-starter start-row', onclick: () => start(button, item) },
      h('span', { class: 'start-name' }, r.name),
      r.no_prompts ? h('span', { class: 'badge off no-prompts' }, t('No prompts')) : null);
    button.setAttribute('aria-describedby', detailId);
    const drop = h('button', { type: 'button', class: 'ghost small remove-row', onclick: () => remove(r) }, t('Remove'));
    drop.setAttribute('aria-label', t('Remove {name}', { name: r.name }));
    return h('li', { class: 'starter-row added-row' }, button,
      h('div', { class: 'row' }, h('span', { class: 'start-detail', id: detailId }, rowDetail(r)), drop));
  });
}

/** Asks, then removes `row` of `machine`; resolves true once the bridge removed it. */
export async function removeRow(machine, row) {
  const sure = await confirmDialog(t('Remove {name}?', { name: row.name }),
    t('{name} is removed from the New page of {machine} for every phone. Panes it opened stay open.', { name: row.name, machine }),
    t('Remove'));
  if (!sure) return false;
  await api(`/api/starters/${encodeURIComponent(machine)}/rows/${encodeURIComponent(row.id)}`, { method: 'DELETE' });
  return true;
}

/**
 * The "Add starter" button and its form for `list` (the answer of `GET /api/starters/{machine}`);
 * null when the machine offers nothing to add. `added()` is called once the bridge kept a row.
 */
export function addForm(machine, list, added, isGone) {
  const templates = list.templates || [];
  if (!list.adds || (templates.length === 0 && !list.free_text)) return null;
  const form = h('form', { class: 'add-row', hidden: true, novalidate: true });
  const open = h('button', { type: 'button', class: 'ghost', 'aria-expanded': 'false' }, t('Add starter'));
  open.addEventListener('click', () => {
    form.hidden = !form.hidden;
    open.setAttribute('aria-expanded', String(!form.hidden));
    if (!form.hidden) name.focus();
  });
  const name = h('input', { id: 'row-name', type: 'text', autocomplete: 'off', autocapitalize: 'off', spellcheck: false });
  const runs = h('select', { id: 'row-runs' },
    templates.map((a) => h('option', { value: a }, a)),
    list.free_text ? h('option', { value: 'line' }, t('A typed line')) : null);
  const model = h('input', { id: 'row-model', type: 'text', autocomplete: 'off', autocapitalize: 'off', spellcheck: false, placeholder: t('default') });
  const noPrompts = h('input', { id: 'row-no-prompts', type: 'checkbox' });
  const line = h('input', { id: 'row-line', type: 'text', autocomplete: 'off', autocapitalize: 'off', spellcheck: false });
  const agentFields = h('div', {},
    h('div', { class: 'field' }, h('label', { for: 'row-model' }, t('Model')), model),
    h('div', { class: 'field row' }, noPrompts, h('label', { for: 'row-no-prompts' }, t('No prompts (skip the agent’s permission prompts)'))));
  const lineField = h('div', { class: 'field', hidden: true }, h('label', { for: 'row-line' }, t('Line')), line,
    h('p', { class: 'hint' }, t('Typed into a fresh shell, as a one-shot command.')));
  const alert = h('p', { role: 'alert', class: 'alert' });
  const save = h('button', { type: 'submit' }, t('Add'));
  function shape() {
    const typed = runs.value === 'line';
    agentFields.hidden = typed;
    lineField.hidden = !typed;
  }
  runs.addEventListener('change', shape);
  shape();
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    alert.textContent = '';
    const problem = nameProblem(name.value);
    if (problem) {
      alert.textContent = problem;
      name.focus();
      return;
    }
    const body = { name: name.value };
    if (runs.value === 'line') body.line = line.value;
    else {
      body.agent = runs.value;
      if (model.value) body.model = model.value;
      if (noPrompts.checked) body.no_prompts = true;
    }
    save.disabled = true;
    try {
      await api(`/api/starters/${encodeURIComponent(machine)}/rows`, { method: 'POST', body });
      if (isGone()) return;
      added();
    } catch (err) {
      if (isGone() || unpaired(err)) return;
      save.disabled = false;
      alert.textContent = refusal(t('Not added'), err);
    }
  });
  form.append(
    h('div', { class: 'field' }, h('label', { for: 'row-name' }, t('Starter name')), name),
    h('div', { class: 'field' }, h('label', { for: 'row-runs' }, t('Runs')), runs),
    agentFields, lineField, alert,
    h('div', { class: 'row end' }, save));
  return h('div', { class: 'add-starter' }, open, form);
}
