// "Report a problem" (seed 002; decision 0082): after input that failed, a link to the project's
// new-issue form, filled in with what helps and nothing private — the bridge's version, the crew
// mode, the browser, and the error Collie showed. Never pane text, a token or a device's name: the
// error is the bridge's answer (its fixed words, SPEC §3.2), cut to 200 characters, with anything
// that looks like a secret (a long unbroken run of letters and digits) taken out. The phone's own
// browser opens the form in a new tab; neither the app nor the bridge calls it.

import { api } from './client.js';
import { h } from './dom.js';
import { t } from './i18n.js';

/** What the last `/api/settings` said: `{version, crew_mode, new_issue}`. */
let known = null;

/** The link, its address filled in once the bridge's version is known (or without it). */
export function reportLink(error) {
  const a = h('a', { class: 'report', target: '_blank', rel: 'noopener noreferrer', hidden: true }, t('Report a problem'));
  facts().then((f) => {
    if (!f?.new_issue) return;
    a.href = reportUrl(f, error);
    a.hidden = false;
  });
  return a;
}

async function facts() {
  if (!known) {
    try {
      const s = await api('/api/settings');
      known = { version: s.version, crew_mode: s.crew_mode, new_issue: s.new_issue };
    } catch {
      return null; // the bridge is unreachable and was never reached: nothing to link to
    }
  }
  return known;
}

/** The new-issue form's address with its title and body filled in. */
export function reportUrl({ version, crew_mode: crew, new_issue: form }, error) {
  const said = String(error || '').slice(0, 200).replace(/[A-Za-z0-9_+/=-]{24,}/g, '[…]');
  const body = [
    `Collie version: ${version || 'unknown'}`,
    `Crew mode: ${crew || 'unknown'}`,
    `Browser: ${navigator.userAgent}`,
    `Error: ${said}`,
    '',
    'What I did:',
    '',
  ].join('\n');
  const url = new URL(form);
  url.searchParams.set('title', `Phone app: ${said}`.slice(0, 120));
  url.searchParams.set('body', body);
  return url.href;
}
