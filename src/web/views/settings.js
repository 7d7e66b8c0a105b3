// Settings (docs/guide/phone-app.md, "Settings"): this device, masking and walky-talky (read-only),
// what the phone keeps, theme, language, paired devices with revoke (confirmed in a dialog), the
// bridge's version and its update check, and unpairing.

import { api } from '../client.js';
import { ago, clear, confirmDialog, h, when } from '../dom.js';
import * as kept from '../kept.js';
import { choice, choose, languages, t } from '../i18n.js';
import { IDLE_CHOICES } from '../idle.js';
import { disablePush, enablePush, pushState } from '../push.js';
import { getDevice, getPref, keepText, setDevice, setPref } from '../store.js';

const TIERS = { read: 'read (watch only)', files: 'files', full: 'full (can type)' };

/** Asks "Revoke <label>?" in a modal dialog; resolves true on Confirm. */
function confirmRevoke(label) {
  return confirmDialog(
    `Revoke ${label}?`,
    'That device will no longer reach this bridge. It can be paired again later.',
    'Confirm',
  );
}

export function settingsView(root, { unpair, applyTheme, rearmIdle, render }) {
  let gone = false;
  const device = getDevice() || {};
  const me = h('dl', { class: 'facts' });
  const masking = h('p', { class: 'fact' }, 'Secret masking: …');
  const walky = h('p', { class: 'fact' }, 'Walky-talky: …');
  const devices = h('ul', { class: 'devices' }, h('li', { class: 'muted' }, 'Loading…'));
  const alert = h('p', { role: 'alert', class: 'alert' });

  function renderMe(d) {
    clear(me);
    me.append(
      h('dt', {}, 'Name'), h('dd', {}, d.label || '—'),
      h('dt', {}, 'Tier'), h('dd', {}, TIERS[d.tier] || d.tier || '—'),
      h('dt', {}, 'Expires'), h('dd', {}, when(d.expires_at)));
  }

  const keep = h('input', {
    id: 'keep',
    type: 'checkbox',
    checked: keepText(),
    onchange: async () => {
      setPref('keep', keep.checked ? 'on' : 'off');
      if (!keep.checked) await kept.deleteAll();
    },
  });

  // Notifications: the switch shows what is true now — on only while the browser and the bridge
  // both hold this phone's subscription.
  const notifyText = {
    unsupported: 'Not supported by this browser. (On an iPhone, add Collie to the Home Screen first.)',
    denied: 'Blocked: notifications for this site are turned off in the browser\u2019s settings.',
    on: 'On: this phone buzzes when a question waits. The notification names the machine and the pane, never the question.',
    off: 'Off: this phone is not told when a question waits.',
  };
  const notifyState = h('p', { id: 'notify-state', class: 'muted small', role: 'status' }, 'Checking…');
  const notify = h('input', {
    id: 'notify',
    type: 'checkbox',
    role: 'switch',
    disabled: true,
    onchange: async () => {
      const want = notify.checked;
      notify.disabled = true;
      notifyState.textContent = want ? 'Turning on…' : 'Turning off…';
      try {
        showNotify(want ? await enablePush() : await disablePush());
      } catch (err) {
        if (gone) return;
        notify.checked = !want;
        notify.disabled = false;
        notifyState.textContent = err?.offline
          ? 'Cannot reach the bridge. Nothing changed.'
          : `Could not turn notifications ${want ? 'on' : 'off'}: ${err?.code || err?.message || err}.`;
      }
    },
  });
  function showNotify(state) {
    if (gone) return;
    notify.checked = state === 'on';
    notify.disabled = state === 'unsupported' || state === 'denied';
    notifyState.textContent = notifyText[state] || state;
  }
  async function loadNotify() {
    try {
      showNotify(await pushState());
    } catch (err) {
      if (gone) return;
      notify.disabled = false;
      notifyState.textContent = err?.offline ? 'Unknown (bridge unreachable).' : 'Unknown.';
    }
  }

  const theme = h('select', {
    id: 'theme',
    onchange: () => {
      setPref('theme', theme.value);
      applyTheme();
    },
  },
  h('option', { value: 'system' }, 'System'),
  h('option', { value: 'dark' }, 'Dark'),
  h('option', { value: 'light' }, 'Light'));
  theme.value = getPref('theme', 'system');

  // The language: the browser's unless one is chosen; a change shows every screen in it at once.
  const language = h('select', {
    id: 'language',
    onchange: async () => {
      language.disabled = true;
      await choose(language.value);
      render();
    },
  }, h('option', { value: 'auto' }, t('As the browser')));
  languages().then((list) => {
    if (gone) return;
    language.append(...list.map((l) => h('option', { value: l.code, lang: l.code }, l.name)));
    language.value = choice();
  });

  // The bridge's version and what its update check last found (SPEC §17).
  const version = h('p', { class: 'fact' }, t('Collie {version}', { version: '…' }));
  const update = h('p', { class: 'muted small', id: 'update-state' });
  function showUpdate(s) {
    version.textContent = t('Collie {version}', { version: s.version });
    const u = s.update || {};
    update.textContent = u.check === 'off'
      ? t('The update check is off (COLLIE_UPDATE_CHECK=off).')
      : u.newer
        ? t('A newer release is out: {latest}. Update the computer to get it.', { latest: u.latest })
        : u.checked_at
          ? t('Up to date (checked {when}).', { when: ago(u.checked_at) })
          : t('Not checked yet.');
  }

  const idle = h('select', {
    id: 'idle',
    onchange: () => {
      setPref('idle', idle.value);
      rearmIdle?.();
    },
  }, IDLE_CHOICES.map((v) => h('option', { value: v }, v === 'off' ? 'Off' : `After ${v} min`)));
  idle.value = getPref('idle', IDLE_CHOICES[0]);

  async function revoke(d) {
    if (!(await confirmRevoke(d.label))) return;
    alert.textContent = '';
    if (d.current) {
      await unpair();
      return;
    }
    try {
      await api(`/api/devices/${encodeURIComponent(d.label)}`, { method: 'DELETE' });
      loadDevices();
    } catch (err) {
      if (err.status === 403 && err.code !== 'insufficient tier') return;
      alert.textContent = err.offline
        ? 'Cannot reach the bridge. Nothing was revoked.'
        : err.code === 'insufficient tier'
          ? 'Only a device of tier full can revoke other devices.'
          : `Could not revoke ${d.label}: ${err.code}.`;
    }
  }

  function renderDevices(list, myTier) {
    clear(devices);
    if (!list.length) devices.append(h('li', { class: 'muted' }, 'No paired devices.'));
    for (const d of list) {
      const canRevoke = d.current || myTier === 'full';
      devices.append(h('li', { class: 'device' },
        h('div', { class: 'device-main' },
          h('span', { class: 'device-label' }, d.label),
          d.current ? h('span', { class: 'badge' }, 'this phone') : null,
          h('span', { class: 'muted small device-meta' },
            `${d.tier} · last seen ${d.last_seen ? ago(d.last_seen) : 'never'} · expires ${when(d.expires_at)}`)),
        canRevoke ? h('button', {
          type: 'button',
          class: 'ghost danger-text',
          'aria-label': `Revoke ${d.label}`,
          onclick: () => revoke(d),
        }, 'Revoke') : null));
    }
  }

  async function loadDevices() {
    try {
      const res = await api('/api/devices');
      if (gone) return;
      const list = res.devices || [];
      const current = list.find((d) => d.current);
      if (current) {
        setDevice(current);
        renderMe(current);
      }
      renderDevices(list, current?.tier || device.tier);
    } catch (err) {
      if (gone || err.status === 403) return;
      clear(devices);
      devices.append(h('li', { class: 'muted' }, err.offline
        ? 'Cannot reach the bridge.'
        : `Could not load the devices: ${err.code}.`));
    }
  }

  async function loadSettings() {
    try {
      const s = await api('/api/settings');
      if (gone) return;
      masking.textContent = `Secret masking: ${s.masking ? 'on' : 'off'}`;
      walky.textContent = `Walky-talky: ${s.walky === false ? 'off' : 'on'}`;
      showUpdate(s);
    } catch {
      if (gone) return;
      masking.textContent = 'Secret masking: unknown (bridge unreachable)';
      walky.textContent = 'Walky-talky: unknown (bridge unreachable)';
    }
  }

  const unpairBtn = h('button', {
    type: 'button',
    class: 'danger wide',
    onclick: async () => {
      unpairBtn.disabled = true;
      await unpair();
    },
  }, 'Unpair this phone');

  renderMe(device);
  root.append(
    h('header', { class: 'bar' },
      h('a', { href: '#/', class: 'bar-link back' }, h('span', { class: 'chev', 'aria-hidden': 'true' }, '‹'), 'Back'),
      h('h1', { tabindex: '-1' }, 'Settings')),
    h('main', { class: 'page' },
      h('section', { class: 'card' },
        h('h2', {}, 'This phone'),
        me,
        masking,
        h('p', { class: 'muted small' }, 'Masking is set on the computer (COLLIE_REDACT).'),
        walky,
        h('p', { class: 'muted small' },
          'Walky-talky is set on the computer (COLLIE_WALKY). ',
          h('a', { href: '#/walky' }, 'Messages'),
          ' lists what its log holds.')),
      h('section', { class: 'card' },
        h('h2', {}, 'Notifications'),
        h('div', { class: 'check' },
          notify,
          h('label', { for: 'notify' }, 'Notify me when a question waits')),
        notifyState),
      h('section', { class: 'card' },
        h('h2', {}, 'On this phone'),
        h('div', { class: 'check' },
          keep,
          h('label', { for: 'keep' }, 'Keep text on this phone')),
        h('p', { class: 'muted small' },
          'A small copy of the last masked screens, shown when the bridge cannot be reached. Off deletes it.'),
        h('div', { class: 'field' },
          h('label', { for: 'theme' }, 'Theme'),
          theme),
        h('div', { class: 'field' },
          h('label', { for: 'language' }, t('Language')),
          language),
        h('div', { class: 'field' },
          h('label', { for: 'idle' }, 'Idle lock'),
          idle),
        h('p', { class: 'muted small' },
          'Covers the screen when nobody touched it for a while. It only hides: it is no security boundary.')),
      h('section', { class: 'card' },
        h('h2', {}, 'Paired devices'),
        devices,
        alert),
      h('section', { class: 'card' },
        h('h2', {}, t('About')),
        version,
        update),
      h('section', { class: 'card' },
        h('p', { class: 'muted small' },
          'Unpairing revokes this phone on the bridge and deletes the token, drafts and kept text here.'),
        unpairBtn)));
  loadDevices();
  loadSettings();
  loadNotify();
  return () => {
    gone = true;
    document.querySelectorAll('dialog.dialog').forEach((d) => d.remove());
  };
}
