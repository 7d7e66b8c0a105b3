// Settings (docs/guide/phone-app.md, "Settings"): this device, masking and walky-talky (read-only),
// what the phone keeps, theme, language, paired devices with revoke (confirmed in a dialog), the
// bridge's version and its update check, and unpairing.

import { api } from '../client.js';
import { ago, around, clear, confirmDialog, h, when } from '../dom.js';
import * as kept from '../kept.js';
import { choice, choose, languages, t } from '../i18n.js';
import { IDLE_CHOICES } from '../idle.js';
import { disablePush, enablePush, pushState } from '../push.js';
import { getDevice, getPref, keepText, setDevice, setPref } from '../store.js';

/** A tier as Settings names it (its value stays as it is: read, files, full). */
const tierName = (tier) => ({ read: t('read (watch only)'), files: 'files', full: t('full (can type)') }[tier]);

/** Asks "Revoke <label>?" in a modal dialog; resolves true on Confirm. */
function confirmRevoke(label) {
  return confirmDialog(
    t('Revoke {label}?', { label }),
    t('That device will no longer reach this bridge. It can be paired again later.'),
    t('Confirm'),
  );
}

export function settingsView(root, { unpair, applyTheme, rearmIdle, render }) {
  let gone = false;
  const device = getDevice() || {};
  const me = h('dl', { class: 'facts' });
  const masking = h('p', { class: 'fact' }, t('Secret masking: …'));
  const walky = h('p', { class: 'fact' }, t('Walky-talky: …'));
  const devices = h('ul', { class: 'devices' }, h('li', { class: 'muted' }, t('Loading…')));
  const alert = h('p', { role: 'alert', class: 'alert' });

  function renderMe(d) {
    clear(me);
    me.append(
      h('dt', {}, t('Name')), h('dd', {}, d.label || '—'),
      h('dt', {}, t('Tier')), h('dd', {}, tierName(d.tier) || d.tier || '—'),
      h('dt', {}, t('Expires')), h('dd', {}, when(d.expires_at)));
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
    unsupported: t('Not supported by this browser. (On an iPhone, add Collie to the Home Screen first.)'),
    denied: t('Blocked: notifications for this site are turned off in the browser\u2019s settings.'),
    on: t('On: this phone buzzes when a question waits. The notification names the machine and the pane, never the question.'),
    off: t('Off: this phone is not told when a question waits.'),
  };
  const notifyState = h('p', { id: 'notify-state', class: 'muted small', role: 'status' }, t('Checking…'));
  const notify = h('input', {
    id: 'notify',
    type: 'checkbox',
    role: 'switch',
    disabled: true,
    onchange: async () => {
      const want = notify.checked;
      notify.disabled = true;
      notifyState.textContent = want ? t('Turning on…') : t('Turning off…');
      try {
        showNotify(want ? await enablePush() : await disablePush());
      } catch (err) {
        if (gone) return;
        notify.checked = !want;
        notify.disabled = false;
        notifyState.textContent = err?.offline
          ? t('Cannot reach the bridge. Nothing changed.')
          : want
            ? t('Could not turn notifications on: {error}.', { error: err?.code || err?.message || err })
            : t('Could not turn notifications off: {error}.', { error: err?.code || err?.message || err });
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
      notifyState.textContent = err?.offline ? t('Unknown (bridge unreachable).') : t('Unknown.');
    }
  }

  const theme = h('select', {
    id: 'theme',
    onchange: () => {
      setPref('theme', theme.value);
      applyTheme();
    },
  },
  h('option', { value: 'system' }, t('System')),
  h('option', { value: 'dark' }, t('Dark')),
  h('option', { value: 'light' }, t('Light')));
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
  }, IDLE_CHOICES.map((v) => h('option', { value: v }, v === 'off' ? t('Off') : t('After {n} min', { n: v }))));
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
        ? t('Cannot reach the bridge. Nothing was revoked.')
        : err.code === 'insufficient tier'
          ? t('Only a device of tier full can revoke other devices.')
          : t('Could not revoke {label}: {code}.', { label: d.label, code: err.code });
    }
  }

  function renderDevices(list, myTier) {
    clear(devices);
    if (!list.length) devices.append(h('li', { class: 'muted' }, t('No paired devices.')));
    for (const d of list) {
      const canRevoke = d.current || myTier === 'full';
      devices.append(h('li', { class: 'device' },
        h('div', { class: 'device-main' },
          h('span', { class: 'device-label' }, d.label),
          d.current ? h('span', { class: 'badge' }, t('this phone')) : null,
          h('span', { class: 'muted small device-meta' },
            t('{tier} · last seen {seen} · expires {expires}', {
              tier: d.tier,
              seen: d.last_seen ? ago(d.last_seen) : t('never'),
              expires: when(d.expires_at),
            }))),
        canRevoke ? h('button', {
          type: 'button',
          class: 'ghost danger-text',
          'aria-label': t('Revoke {label}', { label: d.label }),
          onclick: () => revoke(d),
        }, t('Revoke')) : null));
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
        ? t('Cannot reach the bridge.')
        : t('Could not load the devices: {code}.', { code: err.code })));
    }
  }

  async function loadSettings() {
    try {
      const s = await api('/api/settings');
      if (gone) return;
      masking.textContent = s.masking ? t('Secret masking: on') : t('Secret masking: off');
      walky.textContent = s.walky === false ? t('Walky-talky: off') : t('Walky-talky: on');
      showUpdate(s);
    } catch {
      if (gone) return;
      masking.textContent = t('Secret masking: unknown (bridge unreachable)');
      walky.textContent = t('Walky-talky: unknown (bridge unreachable)');
    }
  }

  const unpairBtn = h('button', {
    type: 'button',
    class: 'danger wide',
    onclick: async () => {
      unpairBtn.disabled = true;
      await unpair();
    },
  }, t('Unpair this phone'));

  renderMe(device);
  root.append(
    h('header', { class: 'bar' },
      h('a', { href: '#/', class: 'bar-link back' }, h('span', { class: 'chev', 'aria-hidden': 'true' }, '‹'), t('Back')),
      h('h1', { tabindex: '-1' }, t('Settings'))),
    h('main', { class: 'page' },
      h('section', { class: 'card' },
        h('h2', {}, t('This phone')),
        me,
        masking,
        h('p', { class: 'muted small' }, t('Masking is set on the computer (COLLIE_REDACT).')),
        walky,
        h('p', { class: 'muted small' }, around(
          t('Walky-talky is set on the computer (COLLIE_WALKY). {messages} lists what its log holds.'),
          { messages: h('a', { href: '#/walky' }, t('Messages')) }))),
      h('section', { class: 'card' },
        h('h2', {}, t('Notifications')),
        h('div', { class: 'check' },
          notify,
          h('label', { for: 'notify' }, t('Notify me when a question waits'))),
        notifyState),
      h('section', { class: 'card' },
        h('h2', {}, t('On this phone')),
        h('div', { class: 'check' },
          keep,
          h('label', { for: 'keep' }, t('Keep text on this phone'))),
        h('p', { class: 'muted small' },
          t('A small copy of the last masked screens, shown when the bridge cannot be reached. Off deletes it.')),
        h('div', { class: 'field' },
          h('label', { for: 'theme' }, t('Theme')),
          theme),
        h('div', { class: 'field' },
          h('label', { for: 'language' }, t('Language')),
          language),
        h('div', { class: 'field' },
          h('label', { for: 'idle' }, t('Idle lock')),
          idle),
        h('p', { class: 'muted small' },
          t('Covers the screen when nobody touched it for a while. It only hides: it is no security boundary.'))),
      h('section', { class: 'card' },
        h('h2', {}, t('Paired devices')),
        devices,
        alert),
      h('section', { class: 'card' },
        h('h2', {}, t('About')),
        version,
        update),
      h('section', { class: 'card' },
        h('p', { class: 'muted small' },
          t('Unpairing revokes this phone on the bridge and deletes the token, drafts and kept text here.')),
        unpairBtn)));
  loadDevices();
  loadSettings();
  loadNotify();
  return () => {
    gone = true;
    document.querySelectorAll('dialog.dialog').forEach((d) => d.remove());
  };
}
