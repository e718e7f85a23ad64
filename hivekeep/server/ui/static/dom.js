// A tiny element builder: h("button", {onclick, class: "x"}, "text", child).
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key in el && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  el.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return el;
}

let ids = 0;
// A labelled form control: returns [label, control]; the id ties them together.
export function field(text, control) {
  control.id ||= `f${++ids}`;
  return [h("label", { for: control.id }, text), control];
}

export function options(values, selected, blank) {
  const list = blank === undefined ? [] : [h("option", { value: "" }, blank)];
  return list.concat(values.map((v) => h("option", { value: v, selected: v === selected }, v)));
}

export const CATEGORIES = ["fact", "preference", "decision", "knowledge"];
export const SCOPES = ["private", "shared"];
