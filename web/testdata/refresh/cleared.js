(look) => (adlink.refresh(), adlink.refresh(), (() => { const s = look(); adlink.refresh(); return s; })())
