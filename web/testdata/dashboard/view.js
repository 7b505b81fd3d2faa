// What the dashboard shows: its state, the sign-in form, the refusal, the
// account, the figures, the chart and the table, and what the tab keeps.
() => {
  const $ = (id) => document.getElementById(id);
  const visible = (id) => !!$(id) && $(id).offsetParent !== null;
  const svg = document.querySelector('#chart svg');
  const height = (r) => Number(r.getAttribute('height'));
  return {
    State: document.body.dataset.state || '',
    SignIn: visible('signin'),
    Dash: visible('dash'),
    SignOut: visible('signout'),
    Refused: visible('refused') ? $('refused').textContent : '',
    NetError: visible('neterror') ? $('neterror-text').textContent : '',
    Account: visible('account') ? $('account').textContent : '',
    Range: $('range').textContent,
    Kpis: ['impressions', 'clicks', 'billable', 'ctr', 'spend'].map((k) => $('k-' + k).textContent),
    Days: svg ? svg.querySelectorAll('g.day').length : 0,
    ClickBars: svg ? [...svg.querySelectorAll('rect.c')].filter((r) => height(r) > 0).length : 0,
    BillableBars: svg ? [...svg.querySelectorAll('rect.b')].filter((r) => height(r) > 0).length : 0,
    SpendLine: !!(svg && svg.querySelector('path.s')),
    ChartEmpty: visible('chart-empty'),
    Rows: [...document.querySelectorAll('#rows tr')].map((tr) => [...tr.cells].map((c) => c.textContent)),
    Session: sessionStorage.getItem('adlink.reportToken'),
    Local: localStorage.length,
  };
}
